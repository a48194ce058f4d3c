import { counterKey } from "./checks.ts";
import type { RatelimitDeps } from "./deps.ts";
import type { CounterOutcome } from "./limiter/sliding-windows.ts";

/** A named limit of a key or an identity (contract 2.5), as verification checks it. */
export interface NamedLimitCheck {
  /** Whose limit: e.g. "key_…" for a key's own limit, "id_…" for one shared by an identity's keys. */
  owner: string;
  name: string;
  limit: number;
  duration: number;
  /** 0 checks without consuming. */
  cost: number;
}

/** Named limits never meet standalone namespaces: this namespace id cannot be created through the API. */
const NAMED = "~named";

/**
 * The in-process API other services use for named key and identity limits:
 * permissions and overrides do not apply (the caller already authorized the
 * verification), counting does, through the same limiter as standalone checks,
 * so several replicas share these budgets too. All or nothing: when one fails,
 * none is counted. One outcome per check, in order.
 */
export function checkNamedLimits(
  deps: Pick<RatelimitDeps, "limiter">,
  workspaceId: string,
  checks: readonly NamedLimitCheck[],
): Promise<CounterOutcome[]> {
  if (checks.length === 0) return Promise.resolve([]);
  const group = checks.map((c) => ({
    key: counterKey(workspaceId, NAMED, `${c.owner}\u001f${c.name}`),
    limit: c.limit,
    duration: c.duration,
    cost: c.cost,
  }));
  return deps.limiter.apply([group]).then((r) => r[0]!);
}
