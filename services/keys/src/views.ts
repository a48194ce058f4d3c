import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Identity } from "@latchkey/proto/identity/v1/identity_pb";
import { type KeySchema, RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { identityView } from "./rbac.ts";
import { effectiveRemaining } from "./refills.ts";
import type { KeyRecord, RefillRecord } from "./store/keys-store.ts";

/**
 * A stored key as reads return it (Unkey's KeyResponseData) at `at`:
 * a refill due and not yet applied shows as applied. `plaintext` only for a
 * recoverable key whose reader may decrypt it. `identity`: the key's identity
 * as the identity service has it (absent when unlinked or deleted).
 */
export function keyView(
  key: KeyRecord,
  at: number,
  plaintext?: string,
  identity?: Identity,
): MessageInitShape<typeof KeySchema> {
  const remaining = effectiveRemaining(key, at);
  return {
    keyId: key.id,
    apiId: key.apiId,
    start: key.start,
    enabled: key.enabled,
    ...(key.name !== null && { name: key.name }),
    ...(key.metaJson !== null && { metaJson: key.metaJson }),
    createdAt: BigInt(key.createdAt),
    ...(key.updatedAt !== null && { updatedAt: BigInt(key.updatedAt) }),
    ...(key.lastUsedAt !== null && { lastUsedAt: BigInt(key.lastUsedAt) }),
    ...(key.expires !== null && { expires: BigInt(key.expires) }),
    permissions: key.permissions,
    roles: key.roles,
    ...(remaining !== null && {
      credits: {
        remaining: BigInt(remaining),
        ...(key.refill && { refill: refillView(key.refill) }),
      },
    }),
    ratelimits: key.ratelimits.map((r) => ({
      id: r.id,
      name: r.name,
      limit: BigInt(r.limit),
      duration: BigInt(r.duration),
      autoApply: r.autoApply,
    })),
    ...(identity !== undefined && { identity: identityView(identity) }),
    ...(plaintext !== undefined && { plaintext }),
    ipAllowList: key.ipAllowList ?? [],
    creditThresholds: key.creditThresholds ?? [],
    ...(key.leakedAt != null && { leakedAt: BigInt(key.leakedAt) }),
    recoverable: key.recoverable,
  };
}

export function refillView(refill: RefillRecord) {
  return {
    interval: refill.interval === "daily" ? RefillInterval.DAILY : RefillInterval.MONTHLY,
    amount: BigInt(refill.amount),
    ...(refill.day !== null && { refillDay: refill.day }),
  };
}
