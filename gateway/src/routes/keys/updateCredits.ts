import { CreditsOperation } from "@latchkey/proto/keys/v1/keys_pb";
import { Type } from "@sinclair/typebox";
import { Credits } from "../../answers.ts";
import { credits } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Enum, ID_PATTERN, Int, Nullable, Str } from "../../schema.ts";

const OPERATIONS = {
  set: CreditsOperation.SET,
  increment: CreditsOperation.INCREMENT,
  decrement: CreditsOperation.DECREMENT,
} as const;

/**
 * set with value null (or none) makes the key unlimited; increment
 * and decrement need a value (the service says so, naming /body/value).
 * Answers the credits after it: {remaining (null: unlimited), refill?}.
 */
export const updateCredits = route({
  audited: true,
  answer: Credits,
  example: { keyId: "key_123", operation: "set", value: 10 },
  rootKey: { needs: ["api.<apiId>.update_key"] },
  errors: [404],
  schema: Closed({
    keyId: Str(3, 255, ID_PATTERN),
    operation: Enum(["set", "increment", "decrement"] as const),
    value: Type.Optional(Nullable(Int())),
  }),
  async handle(input, { caller, services }) {
    const res = await services.keys.updateCredits({
      caller,
      keyId: input.keyId,
      operation: OPERATIONS[input.operation],
      value: input.value == null ? undefined : BigInt(input.value),
    });
    return { data: credits(res) };
  },
});
