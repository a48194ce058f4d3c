import {
  VerifyCode,
  type VerifyKeyRequest,
  type VerifyKeyResponse,
  type VerifyRatelimitRequest,
} from "@latchkey/proto/keys/v1/keys_pb";
import { type Static, Type } from "@sinclair/typebox";
import { Identity, MetaObject } from "../../answers.ts";
import { identity, meta } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Enum, Int, Str } from "../../schema.ts";

/** Bounds from docs/limits.md (tags: at most 10 of 1 to 128) and Unkey's fields. */
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
      // As many as can apply: a key's 50 limits and its identity's 50 (Unkey sets no bound).
      { maxItems: 100 },
    ),
  ),
  migrationId: Type.Optional(Str(0, 256)),
  // Latchkey's addition: the client's address, checked against IP allow-lists (docs/api.md).
  ipAddress: Type.Optional(Str(2, 45)),
});

const CODE_NAMES = [
  "VALID",
  "NOT_FOUND",
  "FORBIDDEN",
  "INSUFFICIENT_PERMISSIONS",
  "USAGE_EXCEEDED",
  "RATE_LIMITED",
  "DISABLED",
  "EXPIRED",
  "FORBIDDEN_IP",
] as const;

/** What verificationJson writes: a found key carries its fields, NOT_FOUND only valid and code. */
const Verification = Closed({
  valid: Type.Boolean(),
  code: Enum(CODE_NAMES),
  keyId: Type.Optional(Type.String({ examples: ["key_2cGKbMxRyIzhCxo1Idjz8q"] })),
  name: Type.Optional(Type.String()),
  meta: Type.Optional(MetaObject),
  expires: Type.Optional(Int()),
  credits: Type.Optional(Type.Integer({ description: "Credits left after this verification." })),
  enabled: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  identity: Type.Optional(Identity),
  ratelimits: Type.Optional(
    Type.Array(
      Closed({
        id: Type.String(),
        name: Type.String(),
        limit: Int(),
        duration: Int(),
        reset: Int(),
        remaining: Int(),
        exceeded: Type.Boolean(),
        autoApply: Type.Boolean(),
      }),
    ),
  ),
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
  [VerifyCode.FORBIDDEN_IP]: "FORBIDDEN_IP",
} as const satisfies Record<VerifyCode, (typeof CODE_NAMES)[number]>;

export const verifyKey = route({
  description:
    "Beyond Unkey: a permission query passes on a wildcard grant (a key holding `documents.*` passes `documents.read`); credits are spent exactly under any concurrency, across instances; a change to a key applies to the next verification on every instance. `ipAddress` (Latchkey's addition): the client's address; a key whose API or own IP allow-list does not hold it answers `valid: false`, `code: FORBIDDEN_IP`; without it, allow-lists are not checked. `CREDITS_ASYNC_COMMIT=true` (off by default) trades durability for speed: credit spends commit without waiting for PostgreSQL's disk flush, still exact, but a crash of PostgreSQL forgets its last ~0.6 s of spends.",
  answer: Verification,
  example: { key: "sk_123" },
  rootKey: {
    needs: ["api.<apiId>.verify_key"],
    masked:
      "A root key without `verify_key` on the key's API is answered as for a key that does not exist: 200 with `valid: false` and `code: NOT_FOUND`.",
  },
  errors: [412],
  schema: verifyKeySchema,
  refused: {
    apiId: {
      message: "apiId is not accepted by keys.verifyKey: the API is the one the key belongs to.",
      fix: "Remove apiId. To verify keys of one API only, give the root key api.<apiId>.verify_key instead of api.*.verify_key.",
    },
  },
  async handle(input, { caller, requestId, services }) {
    // Literals rather than create(): this runs once per verification, the hot path.
    const request: VerifyKeyRequest = {
      $typeName: "keys.v1.VerifyKeyRequest",
      caller: undefined,
      key: input.key,
      cost: input.credits === undefined ? undefined : BigInt(input.credits.cost),
      tags: input.tags ?? [],
      ratelimits: input.ratelimits === undefined ? [] : input.ratelimits.map(ratelimitRequest),
      permissions: input.permissions,
      migrationId: input.migrationId,
      requestId,
      clientIp: input.ipAddress,
    };
    return { json: verificationJson(await services.verifyKey(caller, request)) };
  },
});

function ratelimitRequest(
  r: NonNullable<Static<typeof verifyKeySchema>["ratelimits"]>[number],
): VerifyRatelimitRequest {
  return {
    $typeName: "keys.v1.VerifyRatelimitRequest",
    name: r.name,
    cost: r.cost === undefined ? undefined : BigInt(r.cost),
    limit: r.limit === undefined ? undefined : BigInt(r.limit),
    duration: r.duration === undefined ? undefined : BigInt(r.duration),
  };
}

/**
 * Unkey's verification data, written as JSON directly: a
 * found key carries its fields, NOT_FOUND only valid and code; unset optionals
 * are omitted. Written by hand because it is the answer of the hot path
 * (an intermediate object and JSON.stringify cost about three times as much);
 * fields in the order Unkey lists them.
 */
export function verificationJson(r: VerifyKeyResponse): string {
  let out = `{"valid":${r.valid}`;
  const code = CODES[r.code];
  if (code !== undefined) out += `,"code":"${code}"`;
  if (r.keyId !== undefined) out += `,"keyId":${JSON.stringify(r.keyId)}`;
  if (r.name !== undefined) out += `,"name":${JSON.stringify(r.name)}`;
  const m = meta(r.metaJson);
  if (m !== undefined) out += `,"meta":${JSON.stringify(m)}`;
  if (r.expires !== undefined) out += `,"expires":${Number(r.expires)}`;
  if (r.credits !== undefined) out += `,"credits":${Number(r.credits)}`;
  if (r.enabled !== undefined) out += `,"enabled":${r.enabled}`;
  if (r.keyId !== undefined) {
    out += `,"permissions":${strings(r.permissions)},"roles":${strings(r.roles)}`;
  }
  if (r.identity) out += `,"identity":${JSON.stringify(identity(r.identity))}`;
  if (r.ratelimits.length > 0) {
    let sep = `,"ratelimits":[`;
    for (const l of r.ratelimits) {
      out += `${sep}{"id":${JSON.stringify(l.id)},"name":${JSON.stringify(l.name)},"limit":${Number(l.limit)},"duration":${Number(l.duration)},"reset":${Number(l.reset)},"remaining":${Number(l.remaining)},"exceeded":${l.exceeded},"autoApply":${l.autoApply}}`;
      sep = ",";
    }
    out += "]";
  }
  return `${out}}`;
}

function strings(list: string[]): string {
  if (list.length === 0) return "[]";
  let out = "[";
  for (let i = 0; i < list.length; i++) out += (i === 0 ? "" : ",") + JSON.stringify(list[i]);
  return `${out}]`;
}
