import { create } from "@bufbuild/protobuf";
import { RatelimitConfigSchema } from "@latchkey/proto/common/v1/common_pb";
import { CreditsSchema, RefillSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { Type } from "@sinclair/typebox";
import { NewKey } from "../../answers.ts";
import { INTERVAL_OF } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Enum, EXTERNAL_ID_PATTERN, ID_PATTERN, Int, Meta, Str } from "../../schema.ts";

/** Bounds from docs/limits.md; patterns and the ratelimit and refill shapes as Unkey's v2 API has them. */
export const createKeySchema = Closed({
  apiId: Str(3, 255, ID_PATTERN),
  prefix: Type.Optional(Str(1, 16, ID_PATTERN)),
  name: Type.Optional(Str(1, 255)),
  byteLength: Type.Optional(Int({ minimum: 16, maximum: 255 })),
  externalId: Type.Optional(Str(1, 255, EXTERNAL_ID_PATTERN)),
  meta: Type.Optional(Meta()),
  roles: Type.Optional(Type.Array(Str(1, 100), { maxItems: 100 })),
  permissions: Type.Optional(Type.Array(Str(1, 100, "^[a-zA-Z0-9_:\\-\\.\\*]+$"), { maxItems: 1000 })),
  expires: Type.Optional(Int({ maximum: 4102444800000 })),
  credits: Type.Optional(
    Closed({
      remaining: Int(),
      refill: Type.Optional(
        Closed({
          interval: Enum(["daily", "monthly"] as const),
          amount: Int({ minimum: 1 }),
          refillDay: Type.Optional(Int({ minimum: 1, maximum: 31 })),
        }),
      ),
    }),
  ),
  ratelimits: Type.Optional(
    Type.Array(
      Closed({
        name: Str(3, 128),
        limit: Int({ minimum: 1 }),
        duration: Int({ minimum: 1000 }),
        autoApply: Type.Optional(Type.Boolean()),
      }),
      { maxItems: 50 },
    ),
  ),
  enabled: Type.Optional(Type.Boolean()),
  recoverable: Type.Optional(Type.Boolean()),
  // Latchkey's addition: CIDRs (IPv4, IPv6) the key may be verified from (docs/api.md, IP allow-lists).
  ipAllowList: Type.Optional(Type.Array(Str(2, 64), { maxItems: 100 })),
  // Latchkey's addition: credits.low thresholds in percent (docs/api.md, Credit thresholds).
  creditThresholds: Type.Optional(Type.Array(Int({ maximum: 100 }), { maxItems: 10 })),
});

export const createKey = route({
  audited: true,
  description:
    "Roles and permissions given here need the same `rbac.*` permissions as adding them with keys.addRoles and keys.addPermissions (Unkey does not ask them here).",
  answer: NewKey,
  example: {
    apiId: "api_123",
    prefix: "sk",
    name: "Acme",
    externalId: "user_42",
    credits: { remaining: 100, refill: { interval: "daily", amount: 100 } },
    ratelimits: [{ name: "requests", limit: 10, duration: 1_000, autoApply: true }],
  },
  rootKey: {
    needs: ["api.<apiId>.create_key"],
    also: "`recoverable`: also `api.<apiId>.encrypt_key`; `roles`: also `rbac.*.add_role_to_key`; `permissions`: also `rbac.*.add_permission_to_key` (and `rbac.*.create_permission` for one that does not exist)",
    masked: "A root key without `create_key` on the API is answered 404, as for an API that does not exist.",
  },
  errors: [404, 412],
  schema: createKeySchema,
  async handle(input, { caller, services }) {
    const { credits } = input;
    const res = await services.keys.createKey({
      caller,
      apiId: input.apiId,
      prefix: input.prefix,
      name: input.name,
      byteLength: input.byteLength,
      externalId: input.externalId,
      metaJson: input.meta === undefined ? undefined : JSON.stringify(input.meta),
      roles: input.roles ?? [],
      permissions: input.permissions ?? [],
      expires: input.expires === undefined ? undefined : BigInt(input.expires),
      credits:
        credits === undefined
          ? undefined
          : create(CreditsSchema, {
              remaining: BigInt(credits.remaining),
              refill:
                credits.refill === undefined
                  ? undefined
                  : create(RefillSchema, {
                      interval: INTERVAL_OF[credits.refill.interval],
                      amount: BigInt(credits.refill.amount),
                      refillDay: credits.refill.refillDay,
                    }),
            }),
      ratelimits: (input.ratelimits ?? []).map((r) =>
        create(RatelimitConfigSchema, {
          name: r.name,
          limit: BigInt(r.limit),
          duration: BigInt(r.duration),
          autoApply: r.autoApply ?? false,
        }),
      ),
      enabled: input.enabled,
      recoverable: input.recoverable ?? false,
      ipAllowList: input.ipAllowList ?? [],
      creditThresholds: input.creditThresholds ?? [],
    });
    return { data: { keyId: res.keyId, key: res.key } };
  },
});
