import { Type } from "@sinclair/typebox";
import { NewKey } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, Str } from "../../schema.ts";
import { NO_STORE, sessionAuth } from "./session.ts";

export const createKey = route({
  auth: "portalSession",
  audited: true,
  description:
    "Latchkey's addition: a new key for the session's end user in the portal's API, linked to its externalId's identity; the key is answered this once, and is recoverable when the session was minted with `encrypt_key` over an API holding recoverable keys. Needs the scope `keys:create`; same-origin only from a browser.",
  answer: NewKey,
  example: { name: "CI" },
  rootKey: { needs: [] },
  errors: [412],
  schema: Closed({ name: Type.Optional(Str(1, 255)) }),
  async handle(input, ctx) {
    const res = await ctx.services.portal.createKey({ auth: sessionAuth(ctx, true), name: input.name });
    return { data: { keyId: res.keyId, key: res.key }, headers: NO_STORE };
  },
});
