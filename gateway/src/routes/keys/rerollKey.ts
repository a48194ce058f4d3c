import { NewKey } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Int, Str } from "../../schema.ts";

/** expiration is ms from now until the original stops working (0: at once); answers the new key. */
export const rerollKey = route({
  audited: true,
  answer: NewKey,
  example: { keyId: "key_123", expiration: 0 },
  rootKey: { needs: ["api.<apiId>.create_key"], also: "a recoverable key: also `api.<apiId>.encrypt_key`" },
  errors: [404, 412],
  schema: Closed({ keyId: Str(3, 255, ID_PATTERN), expiration: Int({ maximum: 4102444800000 }) }),
  async handle(input, { caller, services }) {
    const res = await services.keys.rerollKey({
      caller,
      keyId: input.keyId,
      expiration: BigInt(input.expiration),
    });
    return { data: { keyId: res.keyId, key: res.key } };
  },
});
