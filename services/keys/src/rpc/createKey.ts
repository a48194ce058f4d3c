import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  type CreateKeyRequest,
  type CreateKeyResponseSchema,
  type Credits,
  RefillInterval,
} from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason, invalidInput, need, newId } from "@latchkey/runtime";
import { apiNotFound, callerOf, requireOrMask, visibleApi } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { generateKey } from "../key-material.ts";
import { resolveRoles } from "../roles.ts";
import type { KeyRatelimitRecord, RefillRecord } from "../store/keys-store.ts";
import { int64, metaObject } from "./validation.ts";

const MAX_EXPIRES = 4_102_444_800_000;
const PREFIX = /^[a-zA-Z0-9_]{1,16}$/;

export function createKey(deps: KeysDeps) {
  return async (req: CreateKeyRequest): Promise<MessageInitShape<typeof CreateKeyResponseSchema>> => {
    const caller = callerOf(req);
    const input = validCreateKey(req);
    // A root key that may not create keys here learns nothing about the API: the reference masks it as 404.
    requireOrMask(caller, [need("api", input.apiId, "create_key")], apiNotFound);
    const api = await visibleApi(deps, caller, input.apiId);
    if (input.recoverable) {
      requireOrMask(caller, [need("api", api.id, "encrypt_key")], apiNotFound);
      // Encryption of recoverable keys arrives with issue 3.
      throw domainError(ErrorReason.PRECONDITION_FAILED, "This API does not support key encryption.");
    }
    const roles = await resolveRoles(deps, caller.workspaceId, input.roles);
    const material = generateKey(input.prefix, input.byteLength);
    const keyId = newId("key");
    await deps.store.createKey({
      id: keyId,
      workspaceId: caller.workspaceId,
      apiId: api.id,
      hash: material.hash,
      start: material.start,
      name: input.name,
      metaJson: input.metaJson,
      externalId: input.externalId,
      identityId: null,
      permissions: input.permissions,
      roles,
      expires: input.expires,
      enabled: input.enabled,
      remaining: input.remaining,
      refill: input.refill,
      createdAt: deps.clock.now(),
      ratelimits: input.ratelimits.map((r) => ({ ...r, id: newId("rl") })),
    });
    // Drops a negative cache entry for this hash wherever one exists.
    keyChanged(deps, { workspaceId: caller.workspaceId, hash: material.hash, keyId, apiId: api.id });
    return { keyId, key: material.key };
  };
}

export interface CreateKeyInput {
  apiId: string;
  prefix: string | undefined;
  name: string | null;
  byteLength: number;
  externalId: string | null;
  metaJson: string | null;
  roles: string[];
  permissions: string[];
  expires: number | null;
  remaining: number | null;
  refill: RefillRecord | null;
  ratelimits: Omit<KeyRatelimitRecord, "id">[];
  enabled: boolean;
  recoverable: boolean;
}

/** Narrows the request to what the service relies on; the gateway has already checked lengths and patterns. */
export function validCreateKey(req: CreateKeyRequest): CreateKeyInput {
  if (req.apiId === "") throw invalidInput("/apiId", "apiId is required");
  if (req.prefix !== undefined && !PREFIX.test(req.prefix)) {
    throw invalidInput("/prefix", "prefix must be 1 to 16 letters, digits or underscores");
  }
  const byteLength = req.byteLength ?? 16;
  if (!Number.isInteger(byteLength) || byteLength < 16 || byteLength > 255) {
    throw invalidInput("/byteLength", `byteLength must be between 16 and 255, got ${byteLength}`);
  }
  const names = new Set<string>();
  const ratelimits = req.ratelimits.map((r, i) => {
    if (r.name === "") throw invalidInput(`/ratelimits/${i}/name`, "a rate limit needs a name");
    if (names.has(r.name)) {
      throw invalidInput(
        `/ratelimits/${i}/name`,
        `rate limit name '${r.name}' is used twice`,
        "Give each limit its own name.",
      );
    }
    names.add(r.name);
    return {
      name: r.name,
      limit: int64(r.limit, `/ratelimits/${i}/limit`, 1),
      duration: int64(r.duration, `/ratelimits/${i}/duration`, 1000),
      autoApply: r.autoApply,
    };
  });
  req.permissions.forEach((p, i) => {
    if (p === "") throw invalidInput(`/permissions/${i}`, "a permission must not be empty");
  });
  return {
    apiId: req.apiId,
    prefix: req.prefix,
    name: req.name ?? null,
    byteLength,
    externalId: req.externalId ?? null,
    metaJson: metaObject(req.metaJson, "/meta"),
    roles: [...new Set(req.roles)],
    permissions: [...new Set(req.permissions)],
    expires: req.expires === undefined ? null : int64(req.expires, "/expires", 0, MAX_EXPIRES),
    ...validCredits(req.credits),
    ratelimits,
    enabled: req.enabled ?? true,
    recoverable: req.recoverable,
  };
}

function validCredits(credits: Credits | undefined): {
  remaining: number | null;
  refill: RefillRecord | null;
} {
  if (!credits) return { remaining: null, refill: null };
  const remaining = credits.remaining === undefined ? null : int64(credits.remaining, "/credits/remaining");
  const refill = credits.refill;
  if (!refill) return { remaining, refill: null };
  if (remaining === null) {
    throw invalidInput(
      "/credits/remaining",
      "remaining must be set when refill is set",
      "Give the starting balance in credits.remaining.",
    );
  }
  const amount = int64(refill.amount, "/credits/refill/amount", 1);
  switch (refill.interval) {
    case RefillInterval.DAILY:
      if (refill.refillDay !== undefined) {
        throw invalidInput(
          "/credits/refill/refillDay",
          "refillDay applies only to monthly refills",
          "Remove refillDay or use interval monthly.",
        );
      }
      return { remaining, refill: { interval: "daily", amount, day: null } };
    case RefillInterval.MONTHLY: {
      // The contract's default (the 1st) wins over Unkey, which requires refillDay.
      const day = refill.refillDay ?? 1;
      if (!Number.isInteger(day) || day < 1 || day > 31) {
        throw invalidInput("/credits/refill/refillDay", `refillDay must be between 1 and 31, got ${day}`);
      }
      return { remaining, refill: { interval: "monthly", amount, day } };
    }
    case RefillInterval.UNSPECIFIED:
      throw invalidInput("/credits/refill/interval", "interval must be daily or monthly");
    default: {
      const never: never = refill.interval;
      throw invalidInput("/credits/refill/interval", `unknown interval ${never}`);
    }
  }
}
