import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Enum, Str } from "../../schema.ts";
import { NO_STORE } from "./session.ts";

export const PORTAL_SCOPES = ["keys:read", "keys:create", "keys:reroll", "analytics:read"] as const;

export const createSession = route({
  audited: true,
  description:
    "A session of the portal for one end user (`externalId`: the keys of that identity in the portal's API), and the URL to send them to: `<PUBLIC_URL>/portal/?code=<code>`, the code single-use and valid for 60 seconds (Unkey's: 15 minutes). Each scope needs its permission on the portal's API: `keys:read` `api.<apiId>.read_key` and `api.<apiId>.read_api`, `keys:create` and `keys:reroll` `api.<apiId>.create_key`, and also `api.<apiId>.encrypt_key` when the API holds a recoverable key (unless `preview`), `analytics:read` `api.<apiId>.read_analytics`; a scope the root key cannot grant answers 403 for the whole request, naming what it lacks. A `keys:reroll` session also keeps whichever of `rbac.*.add_role_to_key` and `rbac.*.add_permission_to_key` the root key holds, without asking for them, to reroll keys holding roles or direct permissions. The session lasts the portal's `sessionTtlMs` (24 hours by default) from the exchange. `portal` is the portal's id or slug.",
  answer: Closed({
    id: Type.String({ examples: ["ps_2cGKbMxRjIzhCxo1IdjH3a"] }),
    url: Type.String({ examples: ["https://keys.example.com/portal/?code=pst_2cGKbMxRjIzhCxo1IdjH3a"] }),
  }),
  example: { portal: "acme", externalId: "user_123", scopes: ["keys:read", "keys:reroll"] },
  rootKey: {
    needs: ["portal.<portalId>.create_portal_session"],
    also: "each scope its permission on the portal's API (above), `encrypt_key` among them over recoverable keys",
    masked: "A root key without it is answered 404, as for a portal that does not exist.",
  },
  errors: [404, 412],
  schema: Closed({
    portal: Str(3, 255, "^[a-zA-Z0-9_-]+$"),
    externalId: Str(1, 256),
    scopes: Type.Array(Enum(PORTAL_SCOPES), {
      minItems: 1,
      maxItems: PORTAL_SCOPES.length,
      uniqueItems: true,
    }),
    preview: Type.Optional(Type.Boolean()),
    returnUrl: Type.Optional(Str(1, 500)),
  }),
  async handle(input, { caller, services, web }) {
    const res = await services.portal.createSession({
      caller,
      portal: input.portal,
      externalId: input.externalId,
      scopes: input.scopes,
      preview: input.preview ?? false,
      returnUrl: input.returnUrl,
    });
    const url = `${web!.publicOrigin()}/portal/?code=${encodeURIComponent(res.code)}`;
    return { data: { id: res.sessionId, url }, headers: NO_STORE };
  },
});
