import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnalyticsDeps } from "./deps.ts";
import { analyticsRoutes } from "./routes.ts";
import { verification } from "./store/analytics-store.contract.ts";
import { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";
import { callerOf, createTestClickHouse, type TestClickHouse } from "./test-kit.ts";

let db: TestClickHouse;
let client: ReturnType<typeof createClient<typeof AnalyticsService>>;
const mine = callerOf("ws_mine", "api.*.read_analytics");

beforeAll(async () => {
  db = await createTestClickHouse();
  const store = new ClickHouseAnalyticsStore(db.client);
  const deps: AnalyticsDeps = { store, log: createLogger("analytics", "silent"), ready: () => store.ping() };
  client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
  await store.insertVerifications([
    verification({ workspaceId: "ws_mine", keyId: "key_mine" }),
    verification({ workspaceId: "ws_other", keyId: "key_other", externalId: "ext_other" }),
  ]);
});
afterAll(async () => {
  await db.drop();
});

describe("raw analytics queries against a hostile tenant", () => {
  it("never answers another workspace's rows through a join on an alias named like a keyword", async () => {
    const answer = await client
      .getVerifications({
        caller: mine,
        query: "SELECT * FROM (SELECT 1 AS x) AS array JOIN key_verifications_raw AS r ON 1 = 1 LIMIT 50",
      })
      .then((r) => JSON.stringify(r.rows))
      .catch((err: Error) => `refused: ${err.message}`);
    expect(answer).not.toContain("ws_other");
    expect(answer).toMatch(/^refused: /);
  });
});
