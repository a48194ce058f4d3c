import type { RatelimitChecked } from "@latchkey/proto/ratelimit/v1/events_pb";
import type {
  CheckNamedLimitsRequest,
  CheckNamedLimitsResponse,
  NamedLimit,
  NamedLimitGroup,
  NamedLimitGroupResult,
  NamedLimitResult,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { invalidInput, newId } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import type { CounterCheck } from "../limiter/sliding-windows.ts";
import { namedCounter } from "../named-limits.ts";
import { integer } from "../validate.ts";

/**
 * RatelimitService.CheckNamedLimits: the named limits of a batch of
 * verifications, for the keys service. Each group (one verification) passes
 * and is counted whole or not at all; groups do not affect each other.
 *
 * It trusts its caller: no root-key permission is checked, because the keys
 * service has already authorized the verification, and the gateway has no
 * route to it. Input is still checked, since a zero duration would break a
 * counter; a malformed group fails the whole call (the keys service validated
 * these limits when they were stored, so that is a bug, not an outcome).
 */
export function checkNamedLimits(deps: RatelimitDeps) {
  // Each check's event id: this process's random prefix and a counter, made once at the source, so
  // the check is one event however often JetStream or the consumer see it (and no random per check).
  const prefix = `${newId("rln")}:`;
  let sequence = 0;
  return async (req: CheckNamedLimitsRequest): Promise<CheckNamedLimitsResponse> => {
    const started = performance.now();
    const n = req.groups.length;
    // Validated straight into counter checks: one object per limit on the hot path.
    const counters: CounterCheck[][] = new Array(n);
    for (let g = 0; g < n; g++) counters[g] = validCounters(req.groups[g]!, g);
    const outcomes = await deps.limiter.apply(counters);
    // Literals rather than create(): once per limit of every verification, on the hot path.
    const groups: NamedLimitGroupResult[] = new Array(n);
    for (let g = 0; g < n; g++) {
      const group = outcomes[g]!;
      const results: NamedLimitResult[] = new Array(group.length);
      let passed = true;
      for (let i = 0; i < group.length; i++) {
        const o = group[i]!;
        if (!o.success) {
          passed = false;
          deps.exceeded.namedDenied(req.groups[g]!, i, counters[g]![i]!, o);
        }
        results[i] = {
          $typeName: "ratelimit.v1.NamedLimitResult",
          limit: BigInt(o.limit),
          remaining: BigInt(o.remaining),
          reset: BigInt(o.reset),
          exceeded: !o.success,
        };
      }
      groups[g] = { $typeName: "ratelimit.v1.NamedLimitGroupResult", passed, results };
    }
    if (deps.events.recording) emitNamedChecks(deps, `${prefix}${sequence++}`, req.groups, groups, started);
    return { $typeName: "ratelimit.v1.CheckNamedLimitsResponse", groups };
  };
}

/** Named limits' checks appear in analytics under this prefix and the limit's name (docs/analytics-queries.md). */
export const NAMED_NAMESPACE_PREFIX = "named:";

/**
 * Announces the call's named-limit checks to analytics: namespace
 * `named:<name>`, identifier the limit's owner (key or identity id). A group
 * counts all or nothing, so in a group that did not pass every check is
 * recorded as refused: none of them was counted. The checks of the call that
 * share workspace, limit, owner, cost and verdict (one key verified many times
 * in a batch) travel as one event with their `count`, the last one's answer,
 * and the id `base:<i>` of the first: one event per check cost several
 * microseconds each to buffer and store (docs/performance.md).
 */
function emitNamedChecks(
  deps: RatelimitDeps,
  base: string,
  groups: readonly NamedLimitGroup[],
  results: readonly NamedLimitGroupResult[],
  started: number,
): void {
  const time = BigInt(deps.clock.now());
  const latency = performance.now() - started;
  const events = new Map<string, RatelimitChecked>();
  let index = 0;
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    const result = results[g]!;
    for (let i = 0; i < group.limits.length; i++) {
      const l = group.limits[i]!;
      const r = result.results[i]!;
      const cost = l.cost ?? 1n;
      const same = `${group.workspaceId}\u001f${l.owner}\u001f${l.name}\u001f${cost}\u001f${result.passed}`;
      const seen = events.get(same);
      if (seen !== undefined) {
        seen.count++;
        seen.remaining = r.remaining;
        seen.reset = r.reset;
        seen.limit = r.limit;
        continue;
      }
      events.set(same, {
        $typeName: "ratelimit.v1.RatelimitChecked",
        requestId: base,
        index: index++,
        time,
        workspaceId: group.workspaceId,
        namespaceId: NAMED_NAMESPACE_PREFIX + l.name,
        identifier: l.owner,
        passed: result.passed,
        limit: r.limit,
        remaining: r.remaining,
        reset: r.reset,
        cost,
        overrideId: "",
        latency,
        count: 1,
      });
    }
  }
  for (const e of events.values()) deps.events.checked(e);
}

/** One group's limits as counter checks; a malformed limit fails the call, naming where. */
function validCounters(group: NamedLimitGroup, g: number): CounterCheck[] {
  const workspaceId = group.workspaceId;
  if (!workspaceId) throw invalidInput(`/groups/${g}/workspaceId`, "must not be empty");
  const limits = group.limits;
  const counters: CounterCheck[] = new Array(limits.length);
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i]!;
    const limit = Number(l.limit);
    const duration = Number(l.duration);
    const cost = l.cost === undefined ? 1 : Number(l.cost);
    if (
      !(
        l.owner &&
        l.name &&
        limit >= 0 &&
        limit <= MAX &&
        duration >= 1 &&
        duration <= MAX &&
        cost >= 0 &&
        cost <= MAX
      )
    ) {
      invalidLimit(l, g, i);
    }
    counters[i] = namedCounter(workspaceId, { owner: l.owner, name: l.name, limit, duration, cost });
  }
  return counters;
}

const MAX = Number.MAX_SAFE_INTEGER;

/** Throws INVALID_INPUT for the first malformed field of a limit (off the hot path, so locations are built only here). */
function invalidLimit(l: NamedLimit, g: number, i: number): never {
  const where = `/groups/${g}/limits/${i}`;
  if (!l.owner) throw invalidInput(`${where}/owner`, "must not be empty", "Send the key or identity id.");
  if (!l.name) throw invalidInput(`${where}/name`, "must not be empty", "Send the limit's name.");
  integer(l.limit, `${where}/limit`, 0);
  integer(l.duration, `${where}/duration`, 1);
  integer(l.cost ?? 1n, `${where}/cost`, 0);
  throw new Error(`${where}: not malformed after all`);
}
