import { Type } from "@sinclair/typebox";
import { Identity } from "../../answers.ts";
import { identityData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Meta, RatelimitRequest, Str } from "../../schema.ts";
import { ratelimitConfigOf } from "./createIdentity.ts";

/**
 * Omitted meta, ratelimits or ipAllowList are kept; `{}` empties meta and `[]` removes every limit, as in
 * Unkey's v2 API, or clears the allow-list.
 */
export const updateIdentity = route({
  audited: true,
  answer: Identity,
  example: { identity: "user_42", meta: { plan: "pro" } },
  rootKey: { needs: ["identity.*.update_identity"] },
  errors: [404],
  schema: Closed({
    identity: Str(1, 255),
    meta: Type.Optional(Meta()),
    ratelimits: Type.Optional(Type.Array(RatelimitRequest(), { maxItems: 50 })),
    // Latchkey's addition: the whole new IP allow-list; [] clears it (docs/api.md, IP allow-lists).
    ipAllowList: Type.Optional(Type.Array(Str(2, 64), { maxItems: 100 })),
  }),
  async handle(input, { caller, services }) {
    const { identity } = await services.identity.updateIdentity({
      caller,
      identity: input.identity,
      metaJson: input.meta === undefined ? undefined : JSON.stringify(input.meta),
      ratelimits:
        input.ratelimits === undefined ? undefined : { ratelimits: input.ratelimits.map(ratelimitConfigOf) },
      ipAllowList: input.ipAllowList && { entries: input.ipAllowList },
    });
    if (!identity) throw new Error("UpdateIdentity answered without an identity");
    return { data: identityData(identity) };
  },
});
