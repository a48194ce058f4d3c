import { Type } from "@sinclair/typebox";
import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

/** data {}. permanent also removes the hash, so the same key string can be imported again. */
export const deleteKey = route({
  audited: true,
  answer: Empty,
  example: { keyId: "key_123" },
  rootKey: { needs: ["api.<apiId>.delete_key"] },
  errors: [404],
  schema: Closed({ keyId: Str(3, 255, ID_PATTERN), permanent: Type.Optional(Type.Boolean()) }),
  async handle(input, { caller, services }) {
    await services.keys.deleteKey({ caller, keyId: input.keyId, permanent: input.permanent ?? false });
    return { data: {} };
  },
});
