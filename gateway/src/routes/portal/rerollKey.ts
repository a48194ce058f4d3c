import { NewKey } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Int, Str } from "../../schema.ts";
import { NO_STORE, sessionAuth } from "./session.ts";

export const rerollKey = route({
  auth: "portalSession",
  audited: true,
  description:
    "`keys.rerollKey` for the session's end user: only a key of its externalId's identity in the portal's API; any other answers 404 exactly as a missing one. Needs the scope `keys:reroll`; a recoverable key also needs a session minted by a root key holding `api.<apiId>.encrypt_key` (else 403), and its new key is recoverable too. A key holding roles or direct permissions keeps them on the new key, and needs a session minted by a root key holding `rbac.*.add_role_to_key` for roles and `rbac.*.add_permission_to_key` for permissions, not asked at mint (else 403 naming it). Same-origin only from a browser.",
  answer: NewKey,
  example: { keyId: "key_123", expiration: 0 },
  rootKey: { needs: [] },
  errors: [404, 412],
  schema: Closed({ keyId: Str(3, 255, ID_PATTERN), expiration: Int({ maximum: 4102444800000 }) }),
  async handle(input, ctx) {
    const res = await ctx.services.portal.rerollKey({
      auth: sessionAuth(ctx, true),
      keyId: input.keyId,
      expiration: BigInt(input.expiration),
    });
    return { data: { keyId: res.keyId, key: res.key }, headers: NO_STORE };
  },
});
