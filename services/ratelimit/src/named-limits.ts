import { counterKey } from "./checks.ts";
import type { RatelimitDeps } from "./deps.ts";
import type { CounterCheck, CounterOutcome } from "./limiter/sliding-windows.ts";

/** A named limit of a key or an identity, as verification checks it. */
export interface NamedLimitCheck {
  /** Whose limit: e.g. "key_…" for a key's own limit, "id_…" for one shared by an identity's keys. */
  owner: string;
  name: string;
  limit: number;
  duration: number;
  /** 0 checks without consuming. */
  cost: number;
}

/** The named limits of one verification, counted all or nothing. */
export interface NamedLimitGroupCheck {
  workspaceId: string;
  checks: readonly NamedLimitCheck[];
}

/** Named limits never meet standalone namespaces: this namespace id cannot be created through the API. */
const NAMED = "~named";

/** The counter of an owner's named limit; it also decides which replica owns the counter. */
export const namedCounterKey = (workspaceId: string, owner: string, name: string) =>
  counterKey(workspaceId, NAMED, `${owner}\u001f${name}`);

export const namedCounter = (workspaceId: string, c: NamedLimitCheck): CounterCheck => ({
  key: namedCounterKey(workspaceId, c.owner, c.name),
  limit: c.limit,
  duration: c.duration,
  cost: c.cost,
});

/**
 * The named limits of many verifications in one pass of the limiter: each
 * group all or nothing, groups independent. Permissions and overrides do not
 * apply (the caller already authorized the verifications); counting goes
 * through the same limiter as standalone checks, so several replicas share
 * these budgets too, and the groups a peer owns travel to it in one batch.
 * One outcome per check, in order, per group.
 */
export function countNamedLimits(
  deps: Pick<RatelimitDeps, "limiter">,
  groups: readonly NamedLimitGroupCheck[],
): Promise<CounterOutcome[][]> {
  return deps.limiter.apply(groups.map((g) => g.checks.map((c) => namedCounter(g.workspaceId, c))));
}

/** In-process form of one verification's named limits (the keys service calls the CheckNamedLimits RPC). */
export function checkNamedLimits(
  deps: Pick<RatelimitDeps, "limiter">,
  workspaceId: string,
  checks: readonly NamedLimitCheck[],
): Promise<CounterOutcome[]> {
  if (checks.length === 0) return Promise.resolve([]);
  return countNamedLimits(deps, [{ workspaceId, checks }]).then((r) => r[0]!);
}
