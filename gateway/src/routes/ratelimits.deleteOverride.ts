import { route } from "../route.ts";
import { overrideKeySchema } from "./ratelimits.getOverride.ts";

export const deleteOverride = route({
  schema: overrideKeySchema,
  async handle(input, { caller, services }) {
    await services.ratelimit.deleteOverride({ caller, ...input });
    return { data: {} };
  },
});
