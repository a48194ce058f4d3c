import { create } from "@bufbuild/protobuf";
import { type RatelimitConfig, RatelimitConfigSchema } from "@latchkey/proto/common/v1/common_pb";
import { type Static, Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, EXTERNAL_ID_PATTERN, Meta, RatelimitRequest, Str } from "../../schema.ts";

/**
 * As in Unkey's v2 API, this body alone is open: a field it does
 * not name is ignored rather than refused.
 */
export const createIdentity = route({
  audited: true,
  answer: Closed({ identityId: Type.String({ examples: ["id_2cGKbMxRjIzhCxo1IdjH3a"] }) }),
  example: { externalId: "user_42", meta: { plan: "pro" } },
  rootKey: { needs: ["identity.*.create_identity"] },
  errors: [409],
  schema: Type.Object({
    externalId: Str(1, 255, EXTERNAL_ID_PATTERN),
    meta: Type.Optional(Meta()),
    ratelimits: Type.Optional(Type.Array(RatelimitRequest(), { maxItems: 50 })),
    // Latchkey's addition: CIDRs the identity's keys may be verified from (docs/api.md, IP allow-lists).
    ipAllowList: Type.Optional(Type.Array(Str(2, 64), { maxItems: 100 })),
  }),
  async handle(input, { caller, services }) {
    const res = await services.identity.createIdentity({
      caller,
      externalId: input.externalId,
      metaJson: input.meta === undefined ? undefined : JSON.stringify(input.meta),
      ratelimits: (input.ratelimits ?? []).map(ratelimitConfigOf),
      ipAllowList: input.ipAllowList ?? [],
    });
    return { data: { identityId: res.identityId } };
  },
});

export const ratelimitConfigOf = (r: Static<ReturnType<typeof RatelimitRequest>>): RatelimitConfig =>
  create(RatelimitConfigSchema, {
    name: r.name,
    limit: BigInt(r.limit),
    duration: BigInt(r.duration),
    autoApply: r.autoApply ?? false,
  });
