import { KeyData } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, Str } from "../../schema.ts";
import { keyResponseData } from "./getKey.ts";

/** the key behind a plaintext, as keys.getKey answers it; without read_key it is not found. */
export const whoami = route({
  answer: KeyData,
  example: { key: "sk_123" },
  rootKey: {
    needs: ["api.<apiId>.read_key"],
    masked:
      "A root key without `read_key` on the key's API is answered 404, as for a key that does not exist.",
  },
  errors: [404],
  schema: Closed({ key: Str(1, 512) }),
  async handle(input, { caller, services }) {
    const { key } = await services.keys.whoami({ caller, key: input.key });
    if (!key) throw new Error("Whoami answered without a key");
    return { data: keyResponseData(key) };
  },
});
