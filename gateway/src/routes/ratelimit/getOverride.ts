import type { Override } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { OverrideData } from "../../answers.ts";
import { num } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Str } from "../../schema.ts";

export const overrideKeySchema = Closed({ namespace: Str(1, 512), identifier: Str(1, 512) });

export const getOverride = route({
  answer: OverrideData,
  example: { namespace: "email", identifier: "user_1" },
  rootKey: { needs: ["ratelimit.<namespace>.read_override"] },
  errors: [404],
  schema: overrideKeySchema,
  async handle(input, { caller, services }) {
    const res = await services.ratelimit.getOverride({ caller, ...input });
    if (!res.override) throw new Error("GetOverride answered without an override");
    return { data: override(res.override) };
  },
});

/** An override as both contract and reference show it: overrideId, identifier, limit, duration. */
export const override = (o: Override) => ({
  overrideId: o.overrideId,
  identifier: o.identifier,
  limit: num(o.limit),
  duration: num(o.duration),
});
