import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import {
  type NamedLimitGroup,
  NamedLimitGroupSchema,
  type NamedLimitResult,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { domainError, ErrorReason } from "@latchkey/runtime";
import type { KeysDeps } from "../deps.ts";
import type { CachedKey } from "../store/keys-store.ts";
import type { ResolvedIdentity } from "./identity-cache.ts";

/** A limit named in a verification request, validated. */
export interface RequestedLimit {
  name: string;
  cost: number;
  /** Both set: a custom limit of this verification's key, needing no stored config. */
  custom: { limit: number; duration: number } | undefined;
}

/** One limit a verification checks, with whose counter it counts on. */
export interface AppliedLimit {
  /** The config's id; a custom limit gets a stable one of its own. */
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
  /** The key id for a key's own limit, the identity id for one shared by the identity's keys. */
  owner: string;
  cost: number;
}

/**
 * The limits one verification checks:
 * every autoApply limit of the key and of its identity with cost 1, and each
 * named one with its own cost (a name given overrides an autoApply limit of
 * the same name). A key's limit beats its identity's limit of the same name.
 * Naming a limit that exists on neither is PRECONDITION_FAILED.
 */
export function limitsToCheck(
  key: CachedKey,
  identity: ResolvedIdentity | null,
  requested: readonly RequestedLimit[],
): readonly AppliedLimit[] {
  if (requested.length > 0) return appliedLimits(key, identity, requested);
  if (key.ratelimits.length === 0 && (identity === null || identity.ratelimits.length === 0))
    return NO_LIMITS;
  // Without limits named in the request, a key (and its identity) always check the same limits.
  const memo = autoApplied.get(key);
  if (memo !== undefined && memo.identity === identity) return memo.limits;
  const limits = appliedLimits(key, identity, requested);
  autoApplied.set(key, { identity, limits });
  return limits;
}

const NO_LIMITS: readonly AppliedLimit[] = [];

/** The autoApply limits of each cached key record with the identity record they were worked out with. */
const autoApplied = new WeakMap<
  CachedKey,
  { identity: ResolvedIdentity | null; limits: readonly AppliedLimit[] }
>();

function appliedLimits(
  key: CachedKey,
  identity: ResolvedIdentity | null,
  requested: readonly RequestedLimit[],
): AppliedLimit[] {
  const configs = new Map<string, AppliedLimit>();
  for (const r of key.ratelimits) configs.set(r.name, { ...r, owner: key.id, cost: 1 });
  if (identity) {
    for (const r of identity.ratelimits) {
      if (!configs.has(r.name)) configs.set(r.name, { ...r, owner: identity.id, cost: 1 });
    }
  }
  const applied = new Map<string, AppliedLimit>();
  for (const config of configs.values()) if (config.autoApply) applied.set(config.name, config);
  for (const r of requested) {
    if (r.custom) {
      applied.set(r.name, {
        id: customLimitId(key.id, r.name),
        name: r.name,
        ...r.custom,
        autoApply: false,
        owner: key.id,
        cost: r.cost,
      });
      continue;
    }
    const config = configs.get(r.name);
    if (!config) throw unknownLimit(r.name, key, identity);
    applied.set(r.name, { ...config, cost: r.cost });
  }
  return [...applied.values()];
}

function unknownLimit(name: string, key: CachedKey, identity: ResolvedIdentity | null): Error {
  const where = identity
    ? `for key '${key.id}' nor identity: '${identity.id}' external ID: '${identity.externalId}'`
    : `for key '${key.id}' and there is no identity connected`;
  return domainError(
    ErrorReason.PRECONDITION_FAILED,
    `ratelimit '${name}' was requested but does not exist ${where}`,
  );
}

/** A custom limit is not stored, yet answers an id (Unkey's pattern rl_…), the same on every call. */
export function customLimitId(keyId: string, name: string): string {
  return `rl_custom_${createHash("sha256").update(`${keyId}\u001f${name}`).digest("hex").slice(0, 20)}`;
}

/** The verdict on one verification's limits; results one per limit, or none when the limiter was unreachable. */
export interface LimitsVerdict {
  passed: boolean;
  results: readonly NamedLimitResult[];
}

/** Checks one verification's limits all or nothing; a batch passes one that coalesces its calls. */
export type LimitChecker = (workspaceId: string, limits: readonly AppliedLimit[]) => Promise<LimitsVerdict>;

interface LimitGroup {
  workspaceId: string;
  limits: readonly AppliedLimit[];
}

/** One CheckNamedLimits call per verification. */
export const checkEach =
  (deps: KeysDeps): LimitChecker =>
  async (workspaceId, limits) =>
    (await checkGroups(deps, [{ workspaceId, limits }]))[0]!;

/**
 * Many verifications' limits in one CheckNamedLimits call, each group all or
 * nothing. When the ratelimit service cannot be asked, verification fails
 * open by default, as Unkey does: a limiter outage must
 * not take every key down. With deps.ratelimitFailOpen false it fails closed:
 * UNAVAILABLE (503), nothing spent. Either way the cause is logged.
 */
async function checkGroups(deps: KeysDeps, groups: readonly LimitGroup[]): Promise<LimitsVerdict[]> {
  try {
    const res = await deps.ratelimit.checkNamedLimits({
      $typeName: "ratelimit.v1.CheckNamedLimitsRequest",
      groups: groups.map(groupMessage),
    });
    return groups.map((_, i) => {
      const group = res.groups[i];
      if (!group)
        throw new Error(`CheckNamedLimits answered ${res.groups.length} groups for ${groups.length}`);
      return { passed: group.passed, results: group.results };
    });
  } catch (err) {
    if (!deps.ratelimitFailOpen) {
      deps.log.error({ err, groups: groups.length }, "named rate limits could not be checked; refusing");
      throw domainError(ErrorReason.UNAVAILABLE, "Rate limits could not be checked; retry shortly.");
    }
    deps.log.error({ err, groups: groups.length }, "named rate limits could not be checked; allowing");
    return groups.map(() => ({ passed: true, results: [] }));
  }
}

/**
 * Each list of limits as a request group, made once per list: lists of
 * cached keys are shared by their verifications (limitsToCheck), so are
 * their messages, which create() takes as they are. Never mutated.
 */
const groupMessages = new WeakMap<readonly AppliedLimit[], NamedLimitGroup>();

function groupMessage(group: LimitGroup): NamedLimitGroup {
  const known = groupMessages.get(group.limits);
  if (known !== undefined && known.workspaceId === group.workspaceId) return known;
  const message = create(NamedLimitGroupSchema, {
    workspaceId: group.workspaceId,
    limits: group.limits.map((l) => ({
      owner: l.owner,
      name: l.name,
      limit: BigInt(l.limit),
      duration: BigInt(l.duration),
      cost: BigInt(l.cost),
    })),
  });
  groupMessages.set(group.limits, message);
  return message;
}

interface Waiting {
  item: number;
  group: LimitGroup;
  resolve(verdict: LimitsVerdict): void;
  reject(err: unknown): void;
}

/**
 * Coalesces the limit checks of one verification batch, as SpendCollector
 * does its credit spends: every item either reaches its rate-limit step
 * (check) or finishes without one (done); when all have, their groups go to
 * the ratelimit service in one call, and none when no item has a limit.
 * Groups travel in item order, whatever order the items arrived in, so limits
 * shared by several items are granted to the earlier ones, as if the items had
 * come one by one.
 */
export class LimitCollector {
  private readonly waiting: Waiting[] = [];
  private readonly arrived: Uint8Array;
  private outstanding: number;

  constructor(
    private readonly deps: KeysDeps,
    items: number,
  ) {
    this.outstanding = items;
    this.arrived = new Uint8Array(items);
  }

  /** The item at `index` checks its limits; answered once the whole batch has arrived. */
  check(index: number, workspaceId: string, limits: readonly AppliedLimit[]): Promise<LimitsVerdict> {
    return new Promise<LimitsVerdict>((resolve, reject) => {
      this.waiting.push({ item: index, group: { workspaceId, limits }, resolve, reject });
      this.done(index);
    });
  }

  /** The item at `index` checks no limits (or has checked them); idempotent. */
  done(index: number): void {
    if (this.arrived[index] === 1) return;
    this.arrived[index] = 1;
    this.outstanding--;
    if (this.outstanding === 0) void this.flush();
  }

  private async flush(): Promise<void> {
    if (this.waiting.length === 0) return;
    this.waiting.sort((a, b) => a.item - b.item);
    let verdicts: LimitsVerdict[];
    try {
      verdicts = await checkGroups(
        this.deps,
        this.waiting.map((w) => w.group),
      );
    } catch (err) {
      // Failing closed: every item that reached its rate-limit step fails with the same error.
      for (const w of this.waiting) w.reject(err);
      return;
    }
    for (let i = 0; i < this.waiting.length; i++) this.waiting[i]!.resolve(verdicts[i]!);
  }
}
