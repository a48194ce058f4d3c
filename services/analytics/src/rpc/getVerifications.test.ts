import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, Granularity, GroupBy } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger, ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { verification } from "../../testing/analytics-store.suite.ts";
import { callerOf, rejection } from "../../testing/clickhouse.ts";
import { createMemoryAnalyticsDeps } from "../deps.ts";
import { analyticsRoutes } from "../routes.ts";
import { DEFAULT_QUERY_LIMITS } from "../store/analytics-store.ts";

const DAY1 = Date.UTC(2026, 0, 15);
const DAY2 = Date.UTC(2026, 0, 16);
const range = { start: BigInt(DAY1), end: BigInt(Date.UTC(2026, 0, 17)) };
const admin = callerOf("ws_1", "api.*.read_analytics");

function memoryAnalytics() {
  const deps = createMemoryAnalyticsDeps({ log: createLogger("analytics", "silent") });
  const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
  return { deps, client };
}

describe("getVerifications", () => {
  it("answers total, valid and one count per outcome code in each day", async () => {
    const { deps, client } = memoryAnalytics();
    const outcomes = ["VALID", "VALID", "RATE_LIMITED", "USAGE_EXCEEDED", "DISABLED", "EXPIRED", "NOT_FOUND"];
    await deps.store.insertVerifications([
      ...outcomes.map((outcome) => verification({ time: DAY1 + 1000, outcome })),
      verification({ time: DAY2, outcome: "FORBIDDEN", spentCredits: 0 }),
      verification({ time: DAY2 + 5, outcome: "INSUFFICIENT_PERMISSIONS", spentCredits: 0 }),
      verification({ time: DAY2 + 9, outcome: "SOMETHING_NEW" }),
    ]);
    const { buckets } = await client.getVerifications({ caller: admin, ...range });
    expect(buckets.map((b) => ({ ...b, $typeName: undefined }))).toEqual([
      {
        $typeName: undefined,
        time: BigInt(DAY1),
        total: 7n,
        valid: 2n,
        rateLimited: 1n,
        usageExceeded: 1n,
        disabled: 1n,
        expired: 1n,
        notFound: 1n,
        forbidden: 0n,
        insufficientPermissions: 0n,
        spentCredits: 7n,
      },
      {
        $typeName: undefined,
        time: BigInt(DAY2),
        total: 3n,
        valid: 0n,
        rateLimited: 0n,
        usageExceeded: 0n,
        disabled: 0n,
        expired: 0n,
        notFound: 0n,
        forbidden: 1n,
        insufficientPermissions: 1n,
        spentCredits: 1n,
      },
    ]);
  });

  it("splits by tag, hour by hour, counting a verification once per tag it carries", async () => {
    const { deps, client } = memoryAnalytics();
    await deps.store.insertVerifications([
      verification({ time: DAY1 + 10, tags: ["path=/a", "env=prod"] }),
      verification({ time: DAY1 + 20, tags: ["path=/a"], outcome: "RATE_LIMITED" }),
      verification({ time: DAY1 + 3_600_000, tags: ["env=prod"] }),
    ]);
    const { buckets } = await client.getVerifications({
      caller: admin,
      ...range,
      granularity: Granularity.HOUR,
      groupBy: GroupBy.TAG,
    });
    expect(buckets.map((b) => [new Date(Number(b.time)).toISOString(), b.group, b.total, b.valid])).toEqual([
      ["2026-01-15T00:00:00.000Z", "env=prod", 1n, 1n],
      ["2026-01-15T00:00:00.000Z", "path=/a", 2n, 1n],
      ["2026-01-15T01:00:00.000Z", "env=prod", 1n, 1n],
    ]);
  });

  it("groups by identity with its external id, and filters by identity, key and every given tag", async () => {
    const { deps, client } = memoryAnalytics();
    await deps.store.insertVerifications([
      verification({ identityId: "id_1", externalId: "user_1", keyId: "key_1", tags: ["a", "b"] }),
      verification({ identityId: "id_1", externalId: "user_1", keyId: "key_2", tags: ["a"] }),
      verification({ keyId: "key_3" }),
    ]);
    const grouped = await client.getVerifications({ caller: admin, ...range, groupBy: GroupBy.IDENTITY });
    expect(grouped.buckets.map((b) => [b.group, b.externalId, b.total])).toEqual([
      ["", "", 1n],
      ["id_1", "user_1", 2n],
    ]);
    const total = async (fields: object) =>
      (await client.getVerifications({ caller: admin, ...range, ...fields })).buckets.reduce(
        (n, b) => n + b.total,
        0n,
      );
    expect(await total({ identity: "user_1" })).toBe(2n);
    expect(await total({ identity: "id_1", keyId: "key_2" })).toBe(1n);
    expect(await total({ tags: ["a", "b"] })).toBe(1n);
  });

  it("restricts a root key holding read_analytics for one API to that API", async () => {
    const { deps, client } = memoryAnalytics();
    await deps.store.insertVerifications([
      verification({ apiId: "api_1" }),
      verification({ apiId: "api_2" }),
      verification({ apiId: "api_2" }),
    ]);
    const caller = callerOf("ws_1", "api.api_1.read_analytics");
    expect((await client.getVerifications({ caller, ...range })).buckets[0]?.total).toBe(1n);
    expect((await client.getVerifications({ caller, ...range, apiId: "api_1" })).buckets[0]?.total).toBe(1n);
    expect((await client.getVerifications({ caller: admin, ...range })).buckets[0]?.total).toBe(3n);
  });

  it("answers INSUFFICIENT_PERMISSIONS for another API, the same whether it exists or not", async () => {
    const { deps, client } = memoryAnalytics();
    await deps.store.insertVerifications([verification({ apiId: "api_2" })]);
    const caller = callerOf("ws_1", "api.api_1.read_analytics");
    const existing = await rejection(client.getVerifications({ caller, ...range, apiId: "api_2" }));
    expect(existing).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message: "The root key lacks the permission 'api.api_2.read_analytics'.",
    });
    const missing = await rejection(client.getVerifications({ caller, ...range, apiId: "api_404" }));
    expect(missing.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
  });

  it("answers INSUFFICIENT_PERMISSIONS to a root key without any read_analytics", async () => {
    const { client } = memoryAnalytics();
    const caller = callerOf("ws_1", "api.*.verify_key");
    expect((await rejection(client.getVerifications({ caller, ...range }))).reason).toBe(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });

  it("never counts another workspace's verifications", async () => {
    const { deps, client } = memoryAnalytics();
    await deps.store.insertVerifications([verification({ workspaceId: "ws_2" })]);
    expect((await client.getVerifications({ caller: callerOf("ws_1", "*"), ...range })).buckets).toEqual([]);
  });

  it.each([
    [{ start: 10n, end: 10n }, "/end"],
    [{ start: -1n, end: 10n }, "/start"],
    [{ start: 0n, end: BigInt(Date.UTC(2026, 0, 1)), granularity: Granularity.HOUR }, "/end"],
    [{ ...range, tags: ["x".repeat(129)] }, "/tags/0"],
    [{ ...range, tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, "/tags"],
    [{ ...range, apiId: "ab" }, "/apiId"],
  ])("answers INVALID_INPUT for %o at %s", async (fields, location) => {
    const { client } = memoryAnalytics();
    const err = await client.getVerifications({ caller: admin, ...fields }).catch((e: unknown) => e);
    const detail = errorDetailOf(err);
    expect(detail?.reason).toBe(ErrorReason.INVALID_INPUT);
    expect(detail?.violations[0]?.location).toBe(location);
  });

  it("refuses an unsafe raw query with INVALID_ANALYTICS_QUERY before anything runs", async () => {
    const { client } = memoryAnalytics();
    expect(
      await rejection(client.getVerifications({ caller: admin, query: "SELECT * FROM system.tables" })),
    ).toEqual({
      reason: ErrorReason.INVALID_ANALYTICS_QUERY,
      message: expect.stringContaining("Database-qualified table names are not allowed"),
    });
  });

  it("answers PRECONDITION_FAILED to a safe raw query where no ClickHouse runs", async () => {
    const { client } = memoryAnalytics();
    const query = "SELECT count() FROM key_verifications_v1";
    expect((await rejection(client.getVerifications({ caller: admin, query }))).reason).toBe(
      ErrorReason.PRECONDITION_FAILED,
    );
  });

  it("answers UNAVAILABLE, saying nothing of the cause, when the store fails", async () => {
    const { deps, client } = memoryAnalytics();
    deps.store.verifications = async () => {
      throw new Error("connect ECONNREFUSED 127.0.0.1:8123");
    };
    expect(await rejection(client.getVerifications({ caller: admin, ...range }))).toEqual({
      reason: ErrorReason.UNAVAILABLE,
      message: "Analytics are unavailable right now; retry shortly.",
    });
  });
});

describe("getVerifications' concurrency cap", () => {
  it("answers TOO_MANY_ANALYTICS_QUERIES past the cap while queries are held, per workspace, and frees the slot when one settles", async () => {
    const deps = createMemoryAnalyticsDeps({ log: createLogger("analytics", "silent") });
    deps.limits = { ...DEFAULT_QUERY_LIMITS, concurrency: 1 };
    const release: (() => void)[] = [];
    const real = deps.store.verifications.bind(deps.store);
    deps.store.verifications = (q) =>
      new Promise<void>((resolve) => release.push(resolve)).then(() => real(q));
    const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
    const ask = (workspaceId: string) =>
      client.getVerifications({ ...range, caller: callerOf(workspaceId, "api.*.read_analytics") });
    const held = ask("ws_1");
    await new Promise((r) => setTimeout(r, 10));
    const refused = await rejection(ask("ws_1"));
    expect(refused.reason).toBe(ErrorReason.TOO_MANY_ANALYTICS_QUERIES);
    expect(refused.message).toMatch(/at most 1 analytics queries at once/);
    const otherWorkspace = ask("ws_2");
    await new Promise((r) => setTimeout(r, 10));
    for (const r of release.splice(0)) r();
    await Promise.all([held, otherWorkspace]);
    const again = ask("ws_1");
    await new Promise((r) => setTimeout(r, 10));
    for (const r of release.splice(0)) r();
    expect((await again).buckets).toEqual([]);
  });
});

describe("getVerifications' cap on all workspaces' queries", () => {
  it("caps the process's queries in all, gives one workspace at most half of them, and answers another workspace while it is at its worst", async () => {
    const deps = createMemoryAnalyticsDeps({ log: createLogger("analytics", "silent") });
    deps.limits = { ...DEFAULT_QUERY_LIMITS, concurrency: 10, totalConcurrency: 6 };
    const release: (() => void)[] = [];
    const real = deps.store.verifications.bind(deps.store);
    deps.store.verifications = (q) =>
      new Promise<void>((resolve) => release.push(resolve)).then(() => real(q));
    const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
    const ask = (workspaceId: string) =>
      client.getVerifications({ ...range, caller: callerOf(workspaceId, "api.*.read_analytics") }).then(
        () => "answered",
        (err: unknown) => errorDetailOf(err)?.reason,
      );
    const settle = () => new Promise((r) => setTimeout(r, 10));

    // ws_1 at its worst: ten queries at once. Three run (half of six), seven are refused at once.
    const worst = Array.from({ length: 10 }, () => ask("ws_1"));
    await settle();
    expect(release).toHaveLength(3);
    const refused = await rejection(
      client.getVerifications({ ...range, caller: callerOf("ws_1", "api.*.read_analytics") }),
    );
    expect(refused).toEqual({
      reason: ErrorReason.TOO_MANY_ANALYTICS_QUERIES,
      message:
        "A workspace may run at most 3 analytics queries at once (ANALYTICS_QUERY_CONCURRENCY); retry when one has finished.",
    });

    // Another workspace is still served: its query runs while ws_1's are held, and answers.
    const other = ask("ws_2");
    await settle();
    expect(release).toHaveLength(4);
    release.pop()?.();
    expect(await other).toBe("answered");

    // Three workspaces fill the rest; past six in all, the next is refused whoever asks.
    const more = [ask("ws_2"), ask("ws_3"), ask("ws_3")];
    await settle();
    expect(release).toHaveLength(6);
    expect(
      await rejection(
        client.getVerifications({ ...range, caller: callerOf("ws_4", "api.*.read_analytics") }),
      ),
    ).toEqual({
      reason: ErrorReason.TOO_MANY_ANALYTICS_QUERIES,
      message:
        "Analytics are running as many queries as they may at once (6, ANALYTICS_QUERY_TOTAL_CONCURRENCY); retry shortly.",
    });

    for (const r of release.splice(0)) r();
    const answers = await Promise.all([...worst, ...more]);
    expect(answers.filter((a) => a === "answered")).toHaveLength(6);
    expect(answers.filter((a) => a === ErrorReason.TOO_MANY_ANALYTICS_QUERIES)).toHaveLength(7);
    deps.store.verifications = real;
    expect(await ask("ws_4")).toBe("answered");
  });
});
