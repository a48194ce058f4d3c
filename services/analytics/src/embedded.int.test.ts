import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, GroupBy } from "@latchkey/proto/analytics/v1/analytics_pb";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { createLogger } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf, keyVerifiedType, ratelimitCheckedType } from "../testing/clickhouse.ts";
import { createEmbeddedAnalyticsDeps } from "./deps.ts";
import { analyticsRoutes } from "./routes.ts";

const T = Date.UTC(2026, 0, 15, 12);
const log = createLogger("analytics", "silent");

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const verified = (requestId: string, outcome: string) =>
  create(KeyVerifiedSchema, { requestId, time: BigInt(T), workspaceId: "ws_1", apiId: "api_1", outcome });

describe("the embedded default on the process's PostgreSQL", () => {
  it("keeps what was published across a restart: written on close, counted by the next process", async () => {
    const first = await createEmbeddedAnalyticsDeps({ sql: db.sql, log, batching: { intervalMs: 60_000 } });
    first.events.publish(keyVerifiedType, "req_1", verified("req_1", "VALID"));
    first.events.publish(keyVerifiedType, "req_2", verified("req_2", "EXPIRED"));
    first.events.publish(keyVerifiedType, "req_2", verified("req_2", "EXPIRED"));
    first.ingest(
      ratelimitCheckedType.subject,
      "req_3",
      create(RatelimitCheckedSchema, { requestId: "req_3", workspaceId: "ws_1" }),
    );
    // The interval is a minute away: only close writes them.
    expect(first.events.stats()).toMatchObject({ buffered: 4, published: 0 });
    await first.close();
    expect(first.events.stats()).toEqual({ buffered: 0, published: 4, dropped: 0 });

    // A second start applies no migration twice and reads what the first wrote.
    const second = await createEmbeddedAnalyticsDeps({ sql: db.sql, log });
    const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(second)));
    const { buckets } = await client.getVerifications({
      caller: callerOf("ws_1", "*"),
      start: BigInt(T - 1),
      end: BigInt(T + 1),
      groupBy: GroupBy.OUTCOME,
    });
    expect(buckets.map((b) => [b.group, b.total])).toEqual([
      ["EXPIRED", 1n],
      ["VALID", 1n],
    ]);
    expect(await db.sql`SELECT workspace_id, count FROM analytics_ratelimits_per_ms`).toEqual([
      { workspace_id: "ws_1", count: 1 },
    ]);
    expect(
      await db.sql`SELECT version FROM schema_migrations WHERE scope = 'analytics' ORDER BY version`,
    ).toEqual([{ version: 1 }, { version: 2 }]);
    expect(await second.ready()).toBe(true);
    await second.close();
  });
});
