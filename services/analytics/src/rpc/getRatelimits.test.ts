import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, Granularity, RatelimitGroupBy } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger, ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { ratelimitCheck } from "../../testing/analytics-store.suite.ts";
import { callerOf, rejection } from "../../testing/clickhouse.ts";
import { createMemoryAnalyticsDeps } from "../deps.ts";
import { analyticsRoutes } from "../routes.ts";
import { DEFAULT_QUERY_LIMITS } from "../store/analytics-store.ts";

const DAY1 = Date.UTC(2026, 0, 15);
const range = { start: BigInt(DAY1), end: BigInt(Date.UTC(2026, 0, 17)) };
const admin = callerOf("ws_1", "ratelimit.*.read_analytics");

function memoryAnalytics() {
  const deps = createMemoryAnalyticsDeps({ log: createLogger("analytics", "silent") });
  const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
  return { deps, client };
}

async function seeded() {
  const m = memoryAnalytics();
  await m.deps.store.insertRatelimits([
    ratelimitCheck({ time: DAY1 + 10 }),
    ratelimitCheck({ time: DAY1 + 20, passed: false }),
    ratelimitCheck({ time: DAY1 + 3_600_000, identifier: "user_2" }),
    ratelimitCheck({ time: DAY1 + 30, namespaceId: "rlns_2", passed: false }),
    ratelimitCheck({ time: DAY1 + 40, workspaceId: "ws_2" }),
  ]);
  return m;
}

const plain = (b: object) => ({ ...b, $typeName: undefined });

describe("getRatelimits, structured", () => {
  it("answers total, passed and refused per day for the whole workspace", async () => {
    const { client } = await seeded();
    const { buckets, rows } = await client.getRatelimits({ caller: admin, ...range });
    expect(rows).toEqual([]);
    expect(buckets.map(plain)).toEqual([
      { $typeName: undefined, time: BigInt(DAY1), total: 4n, passed: 2n, refused: 2n },
    ]);
  });

  it("splits by namespace and identifier, hour by hour", async () => {
    const { client } = await seeded();
    const { buckets } = await client.getRatelimits({
      caller: admin,
      ...range,
      granularity: Granularity.HOUR,
      groupBy: RatelimitGroupBy.IDENTIFIER,
    });
    expect(
      buckets.map((b) => [b.time - BigInt(DAY1), b.namespaceId, b.identifier, b.passed, b.refused]),
    ).toEqual([
      [0n, "rlns_1", "user_1", 1n, 1n],
      [0n, "rlns_2", "user_1", 0n, 1n],
      [3_600_000n, "rlns_1", "user_2", 1n, 0n],
    ]);
  });

  it("answers a root key reading some namespaces only their checks, and refuses a namespace it may not read whether or not it exists", async () => {
    const { client } = await seeded();
    const some = callerOf("ws_1", "ratelimit.rlns_2.read_analytics");
    const { buckets } = await client.getRatelimits({
      caller: some,
      ...range,
      groupBy: RatelimitGroupBy.NAMESPACE,
    });
    expect(buckets.map((b) => [b.namespaceId, b.total])).toEqual([["rlns_2", 1n]]);
    for (const namespaceId of ["rlns_1", "rlns_nothere"]) {
      expect(await rejection(client.getRatelimits({ caller: some, ...range, namespaceId }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: `The root key lacks the permission 'ratelimit.${namespaceId}.read_analytics'.`,
      });
    }
    const one = await client.getRatelimits({
      caller: admin,
      ...range,
      namespaceId: "rlns_1",
      identifier: "user_2",
    });
    expect(one.buckets.map((b) => b.total)).toEqual([1n]);
  });

  it("answers INSUFFICIENT_PERMISSIONS to a root key without rate-limit analytics, even one reading every API's", async () => {
    const { client } = await seeded();
    expect(
      await rejection(client.getRatelimits({ caller: callerOf("ws_1", "api.*.read_analytics"), ...range })),
    ).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message:
        "The root key lacks the permission 'ratelimit.*.read_analytics' (or 'ratelimit.<namespaceId>.read_analytics').",
    });
  });

  it("refuses an empty or reversed range and too many buckets, naming the field", async () => {
    const { client } = memoryAnalytics();
    const bad = async (fields: object) =>
      rejection(client.getRatelimits({ caller: admin, ...range, ...fields }));
    expect((await bad({ end: range.start })).reason).toBe(ErrorReason.INVALID_INPUT);
    expect(
      (await bad({ start: 0n, end: BigInt(Date.UTC(2026, 0, 1)), granularity: Granularity.HOUR })).message,
    ).toContain("more than 10000 hour buckets");
  });
});

describe("getRatelimits, SQL", () => {
  it("answers PRECONDITION_FAILED where the store runs no SQL, as getVerifications does", async () => {
    const { client } = await seeded();
    expect(
      await rejection(client.getRatelimits({ caller: admin, query: "SELECT count() FROM ratelimits_v1" })),
    ).toEqual({
      reason: ErrorReason.PRECONDITION_FAILED,
      message:
        "SQL analytics queries need ClickHouse, which this deployment does not run; use the structured form (start, end, granularity, groupBy).",
    });
  });

  it("refuses a query over the verification views, and a query mixed with structured fields", async () => {
    const { client } = await seeded();
    const refused = await rejection(
      client.getRatelimits({ caller: admin, query: "SELECT count() FROM key_verifications_v1" }),
    );
    expect(refused.reason).toBe(ErrorReason.INVALID_ANALYTICS_QUERY);
    expect(refused.message).toContain("they read ratelimits_v1, ratelimits_per_minute_v1");
    const mixed = await rejection(
      client.getRatelimits({ caller: admin, query: "SELECT 1 FROM ratelimits_v1", identifier: "x" }),
    );
    expect(mixed.reason).toBe(ErrorReason.INVALID_INPUT);
  });
});

describe("analytics queries share one concurrency cap", () => {
  it("counts a workspace's verification and rate-limit queries against the same per-workspace cap, and still serves another workspace", async () => {
    const deps = createMemoryAnalyticsDeps({ log: createLogger("analytics", "silent") });
    deps.limits = { ...DEFAULT_QUERY_LIMITS, concurrency: 2, totalConcurrency: 8 };
    const release: (() => void)[] = [];
    const hold =
      <T>(real: () => Promise<T>) =>
      () =>
        new Promise<void>((resolve) => release.push(resolve)).then(real);
    const realRatelimits = deps.store.ratelimits.bind(deps.store);
    const realVerifications = deps.store.verifications.bind(deps.store);
    deps.store.ratelimits = (q) => hold(() => realRatelimits(q))();
    deps.store.verifications = (q) => hold(() => realVerifications(q))();
    const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
    const all = (ws: string) => callerOf(ws, "ratelimit.*.read_analytics", "api.*.read_analytics");
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => "answered",
        (err: unknown) => errorDetailOf(err)?.reason,
      );
    const held = [
      outcome(client.getRatelimits({ caller: all("ws_1"), ...range })),
      outcome(client.getVerifications({ caller: all("ws_1"), ...range })),
    ];
    await new Promise((r) => setTimeout(r, 10));
    expect(release).toHaveLength(2);
    expect(await outcome(client.getRatelimits({ caller: all("ws_1"), ...range }))).toBe(
      ErrorReason.TOO_MANY_ANALYTICS_QUERIES,
    );
    const other = outcome(client.getRatelimits({ caller: all("ws_2"), ...range }));
    await new Promise((r) => setTimeout(r, 10));
    expect(release).toHaveLength(3);
    for (const r of release.splice(0)) r();
    expect(await Promise.all([...held, other])).toEqual(["answered", "answered", "answered"]);
  });
});
