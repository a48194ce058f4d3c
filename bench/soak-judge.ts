import { percentile, type Sample } from "./soak-client.ts";

/**
 * The figures `npm run soak` prints and the bounds it holds them to (docs/reliability.md says why
 * each value): pure functions of what the soak recorded, apart from the running of it.
 */

export type Dependency = "nats" | "redis" | "clickhouse" | "postgres";

/** A declared fault: the dependency was down (or its connections killed) from `start` until `end` (unix ms, grace included). */
export interface FaultWindow {
  dependency: Dependency;
  start: number;
  end: number;
  /** What the soak printed of it. */
  note: string;
}

/** The bounds, fixed here rather than settings, so that no run is tuned to pass. */
export const BOUNDS = {
  /** The victim's webhook events, from its operation to their arrival, p99 outside NATS and PostgreSQL faults. */
  webhookP99Ms: 5_000,
  /**
   * The victim's verification p99 under attack (outside fault windows), ms: a victim still served stays far
   * under it, a starved one (a shared queue, a lock or an event loop the attacker holds) goes to seconds.
   * Its ratio to the p99 alone is stated beside it, not judged: on the soak's two cores the attack's own
   * clients and servers share the CPU with Latchkey (docs/reliability.md).
   */
  verifyP99Ms: 250,
  /** RSS of Latchkey's processes, and Redis's used_memory, from the end of the attack's ramp to its end. */
  growth: 0.1,
} as const;

/**
 * The answers a dependency's fault may excuse, and only inside its window: 503 (UNAVAILABLE) from
 * the operations that need it to answer at all. Everything else stays a failure in a window too: a
 * 500, no answer (a hang or a reset), a 503 of an operation that does not need that dependency.
 *
 * - Redis holds the counters of ratelimits.limit and multiLimit: with it down they cannot be
 *   decided (services/ratelimit/README.md, Redis down). A verification's named limits fail open
 *   (RATELIMIT_FAIL_OPEN defaults to true), so a verification is excused only where they fail
 *   closed (`failClosed`: the keys service run with RATELIMIT_FAIL_OPEN=false).
 * - ClickHouse answers analytics queries.
 * - PostgreSQL: every operation may need a connection (a credit spend, a key not cached, every
 *   management operation); a killed connection fails what was running on it.
 * - NATS carries events and cache invalidations, buffered while it is away (docs/limits.md: 200,000
 *   events per process): nothing is excused.
 *
 * The gateway's own 503 for a root key it may not look up yet (its lookup budget spent, `detail`
 * naming the unknown root keys) is no dependency's: it is excused in no window.
 */
export function excused(
  dependency: Dependency,
  op: string,
  status: number,
  failClosed = false,
  detail = "",
): boolean {
  if (status !== 503 || detail.includes("unknown root keys")) return false;
  if (dependency === "redis") return op.startsWith("ratelimits.") || (failClosed && op === "keys.verifyKey");
  if (dependency === "clickhouse") return op.startsWith("analytics");
  if (dependency === "postgres") return true;
  return false;
}

const overlaps = (s: Sample, w: FaultWindow) => s.t <= w.end && s.t + s.ms >= w.start;

export interface StatusFigures {
  total: number;
  ok: number;
  /** 503s that a fault window of a dependency they need excuses, by dependency. */
  excused: Partial<Record<Dependency, number>>;
  /** Every other answer that is not a 2xx: the victim sends only valid requests. By "op status". */
  failures: Record<string, number>;
  /** Of the failures, those that fell inside some fault window (a fault that excuses none of them). */
  failuresInWindows: number;
}

/** The victim's answers: 2xx, excused by a fault, or failures. */
export function judgeStatuses(
  samples: readonly Sample[],
  windows: readonly FaultWindow[],
  failClosed = false,
): StatusFigures {
  const figures: StatusFigures = { total: 0, ok: 0, excused: {}, failures: {}, failuresInWindows: 0 };
  for (const s of samples) {
    figures.total++;
    if (s.status >= 200 && s.status < 300) {
      figures.ok++;
      continue;
    }
    const inWindows = windows.filter((w) => overlaps(s, w));
    const by = inWindows.find((w) => excused(w.dependency, s.op, s.status, failClosed, s.detail));
    if (by) {
      figures.excused[by.dependency] = (figures.excused[by.dependency] ?? 0) + 1;
      continue;
    }
    const key = `${s.op} ${s.status === 0 ? "no answer" : s.status}`;
    figures.failures[key] = (figures.failures[key] ?? 0) + 1;
    if (inWindows.length > 0) figures.failuresInWindows++;
  }
  return figures;
}

/** Latency of the 2xx answers of `op` started in [from, to), outside `windows`. */
export function latencies(
  samples: readonly Sample[],
  op: string,
  from: number,
  to: number,
  windows: readonly FaultWindow[] = [],
): number[] {
  return samples
    .filter(
      (s) =>
        s.op === op &&
        s.status >= 200 &&
        s.status < 300 &&
        s.t >= from &&
        s.t < to &&
        !windows.some((w) => overlaps(s, w)),
    )
    .map((s) => s.ms);
}

export interface OpFigures {
  op: string;
  count: number;
  statuses: Record<string, number>;
  p50: number;
  p99: number;
  max: number;
}

/** Per operation: how many, their statuses, and the latency of all of them (ms). */
export function perOperation(
  samples: readonly Sample[],
  from = 0,
  to = Number.POSITIVE_INFINITY,
): OpFigures[] {
  const by = new Map<string, Sample[]>();
  for (const s of samples) {
    if (s.t < from || s.t >= to) continue;
    const list = by.get(s.op) ?? [];
    list.push(s);
    by.set(s.op, list);
  }
  return [...by.entries()]
    .sort((a, b) => b[1].length - a[1].length)
    .map(([op, list]) => {
      const statuses: Record<string, number> = {};
      for (const s of list) statuses[String(s.status)] = (statuses[String(s.status)] ?? 0) + 1;
      const ms = list.map((s) => s.ms);
      return {
        op,
        count: list.length,
        statuses,
        p50: percentile(ms, 50),
        p99: percentile(ms, 99),
        max: Math.max(...ms),
      };
    });
}

export interface EventFigures {
  expected: number;
  arrived: number;
  missing: { event: string; op: string; t: number }[];
  /** Those measured: caused outside the windows of the dependencies on an event's way (NATS, PostgreSQL). */
  measured: number;
  /** p99 and max of the measured, ms; an event that never arrived counts as infinitely late. */
  p99: number;
  p50: number;
  max: number;
  /** The same over every event, faults included. */
  p99All: number;
}

/**
 * The victim's webhook events: an event is measured unless it was caused from `bound` ms before a
 * NATS or PostgreSQL fault window to its end; those dependencies carry events to the worker
 * (JetStream) and hold the outbox it drains (PostgreSQL), so an event caused then waits for them by
 * design. Redis and ClickHouse are not on the way: their faults exclude nothing.
 */
export function judgeEvents(
  expected: readonly { event: string; op: string; t: number; arrived?: number }[],
  windows: readonly FaultWindow[],
  bound: number,
): EventFigures {
  const onTheWay = windows.filter((w) => w.dependency === "nats" || w.dependency === "postgres");
  const lateness = (e: { t: number; arrived?: number }) =>
    e.arrived === undefined ? Number.POSITIVE_INFINITY : e.arrived - e.t;
  const measured = expected.filter((e) => !onTheWay.some((w) => e.t >= w.start - bound && e.t <= w.end));
  const ms = measured.map(lateness);
  return {
    expected: expected.length,
    arrived: expected.filter((e) => e.arrived !== undefined).length,
    missing: expected.filter((e) => e.arrived === undefined),
    measured: measured.length,
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
    max: ms.length === 0 ? Number.NaN : Math.max(...ms),
    p99All: percentile(expected.map(lateness), 99),
  };
}

/**
 * Memory at `at`: the mean of the last `count` samples taken at or before it outside `windows` (a
 * restarted Redis reads its file back for seconds, its memory climbing from nothing meanwhile);
 * NaN for none.
 */
export function memoryAt(
  samples: readonly { t: number; value: number }[],
  at: number,
  count: number,
  windows: readonly FaultWindow[] = [],
): number {
  const values = samples
    .filter(
      (s) => s.t <= at && Number.isFinite(s.value) && !windows.some((w) => s.t >= w.start && s.t <= w.end),
    )
    .slice(-count)
    .map((s) => s.value);
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

export interface Verdict {
  bound: string;
  figure: string;
  pass: boolean;
}
