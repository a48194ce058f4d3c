import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { overrideKeySchema } from "./getOverride.ts";

export const deleteOverride = route({
  audited: true,
  answer: Empty,
  example: { namespace: "email", identifier: "user_1" },
  rootKey: { needs: ["ratelimit.<namespace>.delete_override"] },
  errors: [404],
  schema: overrideKeySchema,
  async handle(input, { caller, services }) {
    await services.ratelimit.deleteOverride({ caller, ...input });
    return { data: {} };
  },
});
