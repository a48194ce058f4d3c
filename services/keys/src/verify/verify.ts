import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  VerifyCode,
  type VerifyKeyRequest,
  type VerifyKeyResponse,
  type VerifyRatelimitResult,
} from "@latchkey/proto/keys/v1/keys_pb";
import type { PermissionQuery } from "@latchkey/runtime";
import { hashKey, holds, invalidInput, verificationOutcomes } from "@latchkey/runtime";
import { keyIsVisible } from "../access.ts";
import { clientAddress } from "../allow-list.ts";
import { announceThresholds } from "../credit-thresholds.ts";
import type { KeysDeps } from "../deps.ts";
import { keyVerified, noEvents } from "../events.ts";
import { failsChecksum } from "../leaks/key-format.ts";
import type { CachedKey, Spend } from "../store/keys-store.ts";
import type { Grants, ResolvedIdentity } from "./identity-cache.ts";
import type { VerificationMemos } from "./memos.ts";
import {
  type AppliedLimit,
  checkEach,
  type LimitChecker,
  type LimitsVerdict,
  limitsToCheck,
  type RequestedLimit,
} from "./named-limits.ts";

/**
 * A verification's answer: a message written as a literal rather than made by
 * create(), which in `npm start` (localTransport hands messages over as they
 * are) would otherwise walk every field of every answer again.
 */
export type VerifyKeyResult = VerifyKeyResponse;

/** The shared steps of a verification: unary calls make their own, a batch shares them between items. */
export interface VerifySteps {
  /** Spends credits of one key for this verification (through deps.spends, shared with concurrent ones). */
  spend(workspaceId: string, keyId: string, cost: number): Promise<Spend | undefined>;
  checkLimits: LimitChecker;
}

const MAX_COST = 1_000_000_000_000;

/** The counter of each outcome, looked up by label once. */
const outcomeCounters = new Map<VerifyCode, { name: string; counter: { inc(): void } }>();

function counted(code: VerifyCode): string {
  let known = outcomeCounters.get(code);
  if (known === undefined) {
    const name = VerifyCode[code];
    known = { name, counter: verificationOutcomes.labels({ outcome: name }) };
    outcomeCounters.set(code, known);
  }
  known.counter.inc();
  return known.name;
}

/** One verification, counted by outcome and recorded for analytics once judged. */
export async function verify(
  deps: KeysDeps,
  caller: Caller,
  req: VerifyKeyRequest,
  steps?: VerifySteps,
): Promise<VerifyKeyResult> {
  return (await verified(deps, caller, req, steps)).result;
}

/** A verification's answer and, when the caller may see its key, the facts it was made from. */
export interface Verified {
  result: VerifyKeyResult;
  facts: Facts | undefined;
}

/** verify(), with the facts of its answer (the batch's encoder reuses what it made from them). */
export async function verified(
  deps: KeysDeps,
  caller: Caller,
  req: VerifyKeyRequest,
  steps: VerifySteps = {
    spend: (workspaceId, keyId, cost) => deps.spends.spend(workspaceId, keyId, cost),
    checkLimits: checkEach(deps),
  },
): Promise<Verified> {
  const started = performance.now();
  const input = validVerifyKey(deps.verification, req);
  const judgement = await judge(deps, caller, input, steps);
  const { result, key, spent } = judgement;
  const outcome = counted(result.code);
  const now = deps.clock.now();
  // Every verification of a key counts as a use, whatever its outcome (as Unkey's analytics do).
  if (key) deps.lastUsed.record(key.workspaceId, key.id, now);
  // Without an event sink nothing is recorded: not even the record is built.
  if (deps.events === noEvents) return judgement;
  keyVerified(deps, {
    $typeName: "keys.v1.KeyVerified",
    requestId: req.requestId,
    time: BigInt(now),
    workspaceId: caller.workspaceId,
    // key is null whenever the caller may not see it: nothing of it reaches the caller's analytics.
    apiId: key?.apiId ?? "",
    keyId: key?.id ?? "",
    identityId: key?.identityId ?? "",
    externalId: key?.externalId ?? "",
    outcome,
    tags: req.tags,
    spentCredits: BigInt(spent),
    latency: performance.now() - started,
  });
  return judgement;
}

interface Judgement extends Verified {
  /** The key, only when the caller may see it. */
  key: CachedKey | null;
  /** Credits actually spent. */
  spent: number;
}

/** What a found key answers besides its code, gathered step by step. */
export interface Facts {
  key: CachedKey;
  /** What its existing roles and direct permissions grant. */
  grants: Grants;
  identity: ResolvedIdentity | null;
  limits: readonly AppliedLimit[];
  verdict: LimitsVerdict | undefined;
  /** Where the parts of its answer made once per key, grants or identity are kept. */
  memos: VerificationMemos;
}

/**
 * Unkey's order: found, enabled, expired, permission
 * query, rate limits, credits; each failure stops the steps after it, so a
 * denied query spends neither limits nor credits, and a rate-limited
 * verification spends no credits. Outcomes are data: only malformed input and
 * a request naming an unknown rate limit raise. The hot path is one cache
 * lookup each for the key, its roles and its identity, one CheckNamedLimits
 * call and one UPDATE (each shared by a whole batch).
 */
async function judge(
  deps: KeysDeps,
  caller: Caller,
  input: VerifyKeyInput,
  steps: VerifySteps,
): Promise<Judgement> {
  // A key claiming the checksummed format with a wrong check cannot exist: answered before it costs
  // the key cache (no unknown-key entry) or PostgreSQL anything, as a missing key is.
  if (failsChecksum(input.key)) return { result: notFound(), key: null, spent: 0, facts: undefined };
  const hash = hashKey(input.key);
  // Only the caller's workspace's key: a hash is unique per workspace, not across them.
  const cached = deps.keyCache.peek(caller.workspaceId, hash);
  const key = cached !== undefined ? cached : await deps.keyCache.fetch(caller.workspaceId, hash);
  // Missing, deleted, under a deleted API, of another workspace, or not verifiable by this root key:
  // one answer, so the response never tells which.
  if (!keyIsVisible(caller, key) || !holds(caller.permissions, `api.${key.apiId}.verify_key`)) {
    return { result: notFound(), key: null, spent: 0, facts: undefined };
  }
  // A role or permission deleted since the key was given it counts for nothing, even before its
  // deletion is taken off the key (deleted-grants.ts) or should that have been missed.
  // Both answer without a promise when cached, as they are on the hot path.
  const pendingGrants = deps.identityCache.grants(key);
  const pendingIdentity =
    key.identityId === null ? null : deps.identityCache.identity(key.workspaceId, key.identityId);
  const grants = pendingGrants instanceof Promise ? await pendingGrants : pendingGrants;
  const identity = pendingIdentity instanceof Promise ? await pendingIdentity : pendingIdentity;
  const facts: Facts = { key, grants, identity, limits: [], verdict: undefined, memos: deps.verification };
  // Checked only when the verifier gives an address (as a permission query only when it gives one):
  // Unkey's SDKs send none, and a key verified through them keeps working (docs/api.md, IP allow-lists).
  // The API's and the key's lists are in the key's; an identity's list, when it has one, must allow too.
  const allowList = key.allowList;
  if (
    input.clientIp !== undefined &&
    ((allowList != null && !allowList.allows(input.clientIp)) ||
      (identity?.allowList != null && !identity.allowList.allows(input.clientIp)))
  ) {
    return outcome(facts, VerifyCode.FORBIDDEN_IP);
  }
  if (!key.enabled) return outcome(facts, VerifyCode.DISABLED);
  if (key.expires !== null && deps.clock.now() > key.expires) return outcome(facts, VerifyCode.EXPIRED);
  if (input.query !== undefined && !deps.verification.granted(key, input.query, grants)) {
    return outcome(facts, VerifyCode.INSUFFICIENT_PERMISSIONS);
  }
  facts.limits = limitsToCheck(key, identity, input.ratelimits);
  if (facts.limits.length > 0) {
    facts.verdict = await steps.checkLimits(key.workspaceId, facts.limits);
    if (!facts.verdict.passed) return outcome(facts, VerifyCode.RATE_LIMITED);
  }
  if (key.remaining === null) return outcome(facts, VerifyCode.VALID);
  // The cached balance is never trusted: the store spends or reads the current one.
  const spend = await steps.spend(key.workspaceId, key.id, input.cost);
  if (spend === undefined) {
    // Deleted since it was cached; the invalidation is on its way.
    deps.keyCache.invalidate({ workspaceId: caller.workspaceId, hash });
    return { result: notFound(), key: null, spent: 0, facts: undefined };
  }
  if (spend.remaining === null) return outcome(facts, VerifyCode.VALID);
  // Only the one spend of a statement's run that crossed the low threshold, reached 0 or was the first
  // refused for want of credits (credit-events.ts).
  // A key with thresholds of its own (or its API's) announces those instead of CREDITS_LOW_FRACTION's.
  const thresholds = key.creditThresholds;
  if (thresholds != null) {
    announceThresholds(deps.creditEvents, key, thresholds, spend, input.cost, deps.clock.now());
    if (spend.crossed?.exhausted)
      deps.creditEvents.crossed(key, spend.remaining, { ...spend.crossed, low: undefined }, deps.clock.now());
  } else if (spend.crossed !== undefined)
    deps.creditEvents.crossed(key, spend.remaining, spend.crossed, deps.clock.now());
  if (!spend.spent) return outcome(facts, VerifyCode.USAGE_EXCEEDED, spend.remaining);
  return outcome(facts, VerifyCode.VALID, spend.remaining, input.cost);
}

function outcome(facts: Facts, code: VerifyCode, credits?: number, spent = 0): Judgement {
  return { result: answer(facts, code, credits), key: facts.key, spent, facts };
}

/** The answer for a key the caller may not see, whichever the reason: nothing of it. */
function notFound(): VerifyKeyResult {
  return {
    $typeName: "keys.v1.VerifyKeyResponse",
    valid: false,
    code: VerifyCode.NOT_FOUND,
    permissions: [],
    roles: [],
    ratelimits: [],
  };
}

function answer(facts: Facts, code: VerifyCode, credits: number | undefined): VerifyKeyResult {
  const { key, grants, identity, memos } = facts;
  // An undefined field is unset; arrays of the cached records are shared, never copied.
  return {
    $typeName: "keys.v1.VerifyKeyResponse",
    valid: code === VerifyCode.VALID,
    code,
    keyId: key.id,
    name: key.name ?? undefined,
    metaJson: key.metaJson ?? undefined,
    expires: key.expires === null ? undefined : BigInt(key.expires),
    // The balance after this verification: only where it was read from the store, never a cached guess.
    credits: credits === undefined ? undefined : BigInt(credits),
    enabled: key.enabled,
    permissions: grants.permissions as string[],
    // A role deleted since it was given to the key no longer counts.
    roles: grants.roleNames as string[],
    identity: identity ? memos.identityMessage(identity) : undefined,
    ratelimits: limitResults(facts),
  };
}

/** Each evaluated limit; none when the limiter could not be asked. */
function limitResults({ limits, verdict }: Facts): VerifyRatelimitResult[] {
  if (!verdict || verdict.results.length !== limits.length) return [];
  return limits.map((l, i) => {
    const r = verdict.results[i]!;
    return {
      $typeName: "keys.v1.VerifyRatelimitResult",
      id: l.id,
      name: l.name,
      limit: r.limit,
      duration: BigInt(l.duration),
      reset: r.reset,
      remaining: r.remaining,
      exceeded: r.exceeded,
      autoApply: l.autoApply,
    };
  });
}

interface VerifyKeyInput {
  key: string;
  /** The client's address, when the verifier gave one. */
  clientIp: ReturnType<typeof clientAddress>;
  cost: number;
  query: PermissionQuery | undefined;
  ratelimits: RequestedLimit[];
}

function validVerifyKey(memos: VerificationMemos, req: VerifyKeyRequest): VerifyKeyInput {
  if (req.key === "") throw invalidInput("/key", "key is required");
  const clientIp = req.clientIp === undefined ? undefined : clientAddress(req.clientIp);
  if (req.clientIp !== undefined && clientIp === undefined) {
    throw invalidInput(
      "/ipAddress",
      "ipAddress must be an IPv4 or IPv6 address",
      "Give the client's address, e.g. 203.0.113.7.",
    );
  }
  return {
    clientIp,
    key: req.key,
    cost: req.cost === undefined ? 1 : integer(req.cost, "/credits/cost", 0, MAX_COST),
    query: req.permissions === undefined ? undefined : memos.queries.parse(req.permissions),
    ratelimits: req.ratelimits.map((r, i): RequestedLimit => {
      const at = `/ratelimits/${i}`;
      if (r.name === "") throw invalidInput(`${at}/name`, "a rate limit needs a name");
      return {
        name: r.name,
        cost: r.cost === undefined ? 1 : integer(r.cost, `${at}/cost`, 0, MAX_COST),
        // With both, a custom limit of this key; with one alone, the stored limit of that name.
        custom:
          r.limit !== undefined && r.duration !== undefined
            ? {
                limit: integer(r.limit, `${at}/limit`, 0, MAX_COST),
                duration: integer(r.duration, `${at}/duration`, 1, MAX_DURATION),
              }
            : undefined,
      };
    }),
  };
}

/** 30 days, Unkey's longest window. */
const MAX_DURATION = 2_592_000_000;

function integer(value: bigint, location: string, min: number, max: number): number {
  if (value < BigInt(min) || value > BigInt(max)) {
    throw invalidInput(location, `${location.slice(1)} must be between ${min} and ${max}, got ${value}`);
  }
  return Number(value);
}
