import { create } from "@bufbuild/protobuf";
import {
  VerifyCode,
  VerifyKeyRequestSchema,
  type VerifyKeyResponse,
  VerifyRatelimitRequestSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { Type } from "@sinclair/typebox";
import { defined, identity, meta, num, optNum } from "../json.ts";
import { route } from "../route.ts";
import { Closed, Int, Str } from "../schema.ts";

/** Contract 4.1 rules 2 to 5 (tags: at most 10 of 1 to 128) and the reference's fields (notes a.3). */
export const verifyKeySchema = Closed({
  key: Str(1, 512),
  tags: Type.Optional(Type.Array(Str(1, 128), { maxItems: 10 })),
  permissions: Type.Optional(Str(1, 1000)),
  credits: Type.Optional(Closed({ cost: Int({ maximum: 1_000_000_000_000 }) })),
  ratelimits: Type.Optional(
    Type.Array(
      Closed({
        name: Str(3, 255),
        cost: Type.Optional(Int()),
        limit: Type.Optional(Int()),
        duration: Type.Optional(Int()),
      }),
    ),
  ),
  migrationId: Type.Optional(Str(0, 256)),
});

const CODES = {
  [VerifyCode.UNSPECIFIED]: "NOT_FOUND",
  [VerifyCode.VALID]: "VALID",
  [VerifyCode.NOT_FOUND]: "NOT_FOUND",
  [VerifyCode.FORBIDDEN]: "FORBIDDEN",
  [VerifyCode.INSUFFICIENT_PERMISSIONS]: "INSUFFICIENT_PERMISSIONS",
  [VerifyCode.USAGE_EXCEEDED]: "USAGE_EXCEEDED",
  [VerifyCode.RATE_LIMITED]: "RATE_LIMITED",
  [VerifyCode.DISABLED]: "DISABLED",
  [VerifyCode.EXPIRED]: "EXPIRED",
} as const satisfies Record<VerifyCode, string>;

export const verifyKey = route({
  schema: verifyKeySchema,
  refused: {
    apiId: {
      message: "apiId is not accepted by keys.verifyKey: the API is the one the key belongs to.",
      fix: "Remove apiId. To verify keys of one API only, give the root key api.<apiId>.verify_key instead of api.*.verify_key.",
    },
  },
  async handle(input, { caller, requestId, services }) {
    const request = create(VerifyKeyRequestSchema, {
      key: input.key,
      cost: input.credits === undefined ? undefined : BigInt(input.credits.cost),
      tags: input.tags ?? [],
      ratelimits: (input.ratelimits ?? []).map((r) =>
        create(VerifyRatelimitRequestSchema, {
          name: r.name,
          cost: r.cost === undefined ? undefined : BigInt(r.cost),
          limit: r.limit === undefined ? undefined : BigInt(r.limit),
          duration: r.duration === undefined ? undefined : BigInt(r.duration),
        }),
      ),
      permissions: input.permissions,
      migrationId: input.migrationId,
      requestId,
    });
    return { data: verification(await services.verifyKey(caller, request)) };
  },
});

/** The reference's verification data (notes b.4): a found key carries its fields, NOT_FOUND only valid and code. */
export function verification(r: VerifyKeyResponse) {
  const found = r.keyId !== undefined;
  return defined({
    valid: r.valid,
    code: CODES[r.code],
    keyId: r.keyId,
    name: r.name,
    meta: meta(r.metaJson),
    expires: optNum(r.expires),
    credits: optNum(r.credits),
    enabled: r.enabled,
    permissions: found ? r.permissions : undefined,
    roles: found ? r.roles : undefined,
    identity: r.identity ? identity(r.identity) : undefined,
    ratelimits:
      r.ratelimits.length > 0
        ? r.ratelimits.map((l) => ({
            id: l.id,
            name: l.name,
            limit: num(l.limit),
            duration: num(l.duration),
            reset: num(l.reset),
            remaining: num(l.remaining),
            exceeded: l.exceeded,
            autoApply: l.autoApply,
          }))
        : undefined,
  });
}
