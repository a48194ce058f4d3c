import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  VerifyCode,
  type VerifyKeyRequest,
  type VerifyKeyResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason, hashKey, holds, invalidInput } from "@latchkey/runtime";
import { callerOf, keyIsVisible } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { keyVerified } from "../events.ts";
import { type PermissionQuery, parsePermissionQuery, satisfies } from "../permission-query.ts";
import type { Spend, VerifiableKey } from "../store/keys-store.ts";

export type VerifyKeyResult = MessageInitShape<typeof VerifyKeyResponseSchema>;

/** Spends credits of one key for one verification; a batch passes one that coalesces its spends. */
export type Spender = (keyId: string, cost: number) => Promise<Spend | undefined>;

/** One statement per verification, applying a due refill first. */
export const spendEach =
  (deps: KeysDeps): Spender =>
  (keyId, cost) =>
    deps.store.spendCredits(keyId, cost, deps.clock.now());

const MAX_COST = 1_000_000_000_000;

export function verifyKey(deps: KeysDeps) {
  return (req: VerifyKeyRequest): Promise<VerifyKeyResult> => verify(deps, callerOf(req), req);
}

/** One verification, recorded for analytics once judged. */
export async function verify(
  deps: KeysDeps,
  caller: Caller,
  req: VerifyKeyRequest,
  spend: Spender = spendEach(deps),
): Promise<VerifyKeyResult> {
  const started = performance.now();
  const input = validVerifyKey(req);
  const { result, key, spent } = await judge(deps, caller, input, req, spend);
  keyVerified(deps, {
    requestId: req.requestId,
    time: deps.clock.now(),
    workspaceId: caller.workspaceId,
    // key is null whenever the caller may not see it: nothing of it reaches the caller's analytics.
    apiId: key?.apiId ?? "",
    keyId: key?.id ?? "",
    identityId: key?.identityId ?? "",
    externalId: key?.externalId ?? "",
    outcome: VerifyCode[result.code ?? VerifyCode.UNSPECIFIED],
    tags: req.tags,
    spentCredits: spent,
    latency: performance.now() - started,
  });
  return result;
}

interface Judgement {
  result: VerifyKeyResult;
  /** The key, only when the caller may see it. */
  key: VerifiableKey | null;
  /** Credits actually spent. */
  spent: number;
}

/**
 * The reference's order (notes b.3). Outcomes are data: only malformed input
 * and a request naming an unknown rate limit raise. The hot path is one cache
 * lookup and, for keys with credits, one UPDATE (shared by a whole batch).
 */
async function judge(
  deps: KeysDeps,
  caller: Caller,
  input: VerifyKeyInput,
  req: VerifyKeyRequest,
  spendCredits: Spender,
): Promise<Judgement> {
  const hash = hashKey(input.key);
  const cached = deps.keyCache.peek(hash);
  const key = cached !== undefined ? cached : await deps.keyCache.fetch(hash);
  // Missing, deleted, under a deleted API, of another workspace, or not verifiable by this root key:
  // one answer, so the response never tells which.
  if (!keyIsVisible(caller, key) || !holds(caller.permissions, `api.${key.apiId}.verify_key`)) {
    return { result: { valid: false, code: VerifyCode.NOT_FOUND }, key: null, spent: 0 };
  }
  if (!key.enabled) return outcome(key, VerifyCode.DISABLED);
  if (key.expires !== null && deps.clock.now() > key.expires) return outcome(key, VerifyCode.EXPIRED);
  if (input.query !== undefined && !satisfies(input.query, key.permissions)) {
    return outcome(key, VerifyCode.INSUFFICIENT_PERMISSIONS);
  }
  for (const r of req.ratelimits) {
    // An inline limit (limit and duration given) needs no stored config.
    if (r.limit !== undefined && r.duration !== undefined) continue;
    if (!key.ratelimits.some((k) => k.name === r.name)) {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        `ratelimit '${r.name}' was requested but does not exist for key '${key.id}'`,
      );
    }
  }
  // Rate limits are evaluated here once issue 4 lands; a limited verification must spend no credits.
  if (key.remaining === null) return outcome(key, VerifyCode.VALID);
  // The cached balance is never trusted: the store spends or reads the current one.
  const spend = await spendCredits(key.id, input.cost);
  if (spend === undefined) {
    // Deleted since it was cached; the invalidation is on its way.
    deps.keyCache.invalidate(hash);
    return { result: { valid: false, code: VerifyCode.NOT_FOUND }, key: null, spent: 0 };
  }
  if (spend.remaining === null) return outcome(key, VerifyCode.VALID);
  if (!spend.spent) return outcome(key, VerifyCode.USAGE_EXCEEDED, spend.remaining);
  return outcome(key, VerifyCode.VALID, spend.remaining, input.cost);
}

function outcome(key: VerifiableKey, code: VerifyCode, credits?: number, spent = 0): Judgement {
  return { result: response(key, code, credits), key, spent };
}

function response(key: VerifiableKey, code: VerifyCode, credits: number | undefined): VerifyKeyResult {
  // undefined fields are left unset by create(); arrays are shared with the cached record, never copied.
  return {
    valid: code === VerifyCode.VALID,
    code,
    keyId: key.id,
    name: key.name ?? undefined,
    metaJson: key.metaJson ?? undefined,
    expires: key.expires === null ? undefined : BigInt(key.expires),
    // The balance after this verification: only where it was read from the store, never a cached guess.
    credits: credits === undefined ? undefined : BigInt(credits),
    enabled: key.enabled,
    permissions: key.permissions,
    roles: key.roles,
  };
}

interface VerifyKeyInput {
  key: string;
  cost: number;
  query: PermissionQuery | undefined;
}

function validVerifyKey(req: VerifyKeyRequest): VerifyKeyInput {
  if (req.key === "") throw invalidInput("/key", "key is required");
  let cost = 1;
  if (req.cost !== undefined) {
    if (req.cost < 0n || req.cost > BigInt(MAX_COST)) {
      throw invalidInput("/credits/cost", `cost must be between 0 and ${MAX_COST}, got ${req.cost}`);
    }
    cost = Number(req.cost);
  }
  return {
    key: req.key,
    cost,
    query: req.permissions === undefined ? undefined : parsePermissionQuery(req.permissions),
  };
}
