import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, GroupBy } from "@latchkey/proto/analytics/v1/analytics_pb";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { createLogger, DirectEventSink } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, keyVerifiedType, ratelimitCheckedType } from "../testing/clickhouse.ts";
import { createEmbeddedAnalyticsDeps } from "./deps.ts";
import { analyticsRoutes } from "./routes.ts";
import { MemoryAnalyticsStore } from "./store/memory-analytics-store.ts";

const T = Date.UTC(2026, 0, 15, 12);

describe("the embedded default without a database (memory: one process, no ClickHouse, no NATS)", () => {
  it("counts verifications delivered through a DirectEventSink, once per request id", async () => {
    const store = new MemoryAnalyticsStore();
    const deps = await createEmbeddedAnalyticsDeps({ store, log: createLogger("analytics", "silent") });
    const sink = new DirectEventSink(deps.ingest);
    const event = (requestId: string, outcome: string) =>
      create(KeyVerifiedSchema, {
        requestId,
        time: BigInt(T),
        workspaceId: "ws_1",
        apiId: "api_1",
        outcome,
      });
    sink.publish(keyVerifiedType, "req_1", event("req_1", "VALID"));
    sink.publish(keyVerifiedType, "req_2", event("req_2", "EXPIRED"));
    sink.publish(keyVerifiedType, "req_2", event("req_2", "EXPIRED"));
    sink.publish(
      ratelimitCheckedType,
      "req_4",
      create(RatelimitCheckedSchema, { requestId: "req_4", workspaceId: "ws_1" }),
    );
    sink.publish({ ...keyVerifiedType, subject: "events.something.else" }, "req_5", event("req_5", "VALID"));

    const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
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
    expect(store.ratelimitRows.map((r) => r.requestId)).toEqual(["req_4"]);
    expect(await deps.ready()).toBe(true);
  });
});
