import net from "node:net";
import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, GroupBy } from "@latchkey/proto/analytics/v1/analytics_pb";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { createLogger, EVENTS_STREAM, JetStreamEventSink, LoopProgress } from "@latchkey/runtime";
import { ownNatsServer } from "@latchkey/runtime/testing/nats-server";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, it } from "vitest";
import {
  callerOf,
  createTestClickHouse,
  eventually,
  keyVerifiedType,
  type TestClickHouse,
  testClickHouseUrl,
  testNatsUrl,
} from "../testing/clickhouse.ts";
import { openClickHouse } from "./clickhouse.ts";
import { type RunningConsumer, startConsumer } from "./consumer.ts";
import type { AnalyticsDeps } from "./deps.ts";
import { analyticsRoutes } from "./routes.ts";
import type { AnalyticsStore } from "./store/analytics-store.ts";
import { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";

const log = createLogger("analytics-test", "silent");
const OUTCOMES = ["VALID", "VALID", "RATE_LIMITED", "USAGE_EXCEEDED"] as const;
const TAGS = [["env=prod"], ["env=prod", "path=/a"], []] as const;

/** Event i of a run: outcome and tags cycle, so the expected split is known. */
function keyVerified(workspaceId: string, i: number, time: number) {
  return create(KeyVerifiedSchema, {
    requestId: `req_${workspaceId}_${i}`,
    time: BigInt(time),
    workspaceId,
    apiId: "api_1",
    keyId: `key_${i % 3}`,
    outcome: OUTCOMES[i % OUTCOMES.length],
    tags: [...TAGS[i % TAGS.length]!],
    spentCredits: 1n,
    latency: 0.3,
  });
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length)
    await cleanups
      .pop()?.()
      .catch(() => {});
});

/** Counts of the workspace's events stored in ClickHouse, read directly. */
async function stored(db: TestClickHouse, workspaceId: string): Promise<number> {
  const rs = await db.client.query({
    query: `SELECT count() AS n FROM key_verifications_raw WHERE workspace_id = '${workspaceId}'`,
    format: "JSONEachRow",
  });
  return Number((await rs.json<{ n: number }>())[0]?.n);
}

interface Pipeline {
  db: TestClickHouse;
  sink: JetStreamEventSink;
  consumer: RunningConsumer;
  workspaceId: string;
  publish(from: number, to: number, time?: number): void;
}

async function pipeline(options: {
  nats: NatsConnection;
  clickhouseUrl?: (db: TestClickHouse) => Promise<string>;
  wrap?: (store: AnalyticsStore) => AnalyticsStore;
  batchSize?: number;
  progress?: LoopProgress;
}): Promise<Pipeline> {
  const db = await createTestClickHouse();
  cleanups.push(() => db.drop());
  const workspaceId = `ws_${Math.random().toString(36).slice(2, 10)}`;
  const url = options.clickhouseUrl ? await options.clickhouseUrl(db) : db.url;
  const { client } = await openClickHouse(url, { requestTimeoutMs: 2_000 });
  cleanups.push(() => client.close());
  const durable = `analytics_test_${workspaceId}`;
  const consumer = await startConsumer({
    nats: options.nats,
    store: (options.wrap ?? ((s) => s))(new ClickHouseAnalyticsStore(client)),
    log,
    durable,
    batchSize: options.batchSize ?? 500,
    intervalMs: 200,
    maxBackoffMs: 500,
    startAt: "new",
    ...(options.progress && { progress: options.progress }),
  });
  cleanups.push(async () => {
    await consumer.stop(1_000);
    const jsm = await jetstreamManager(options.nats);
    await jsm.consumers.delete(EVENTS_STREAM, durable).catch(() => {});
  });
  const sink = new JetStreamEventSink(options.nats, log, { intervalMs: 20 });
  cleanups.push(async () => sink.close());
  return {
    db,
    sink,
    consumer,
    workspaceId,
    publish(from, to, time = Date.now()) {
      for (let i = from; i < to; i++) {
        sink.publish(keyVerifiedType, `req_${workspaceId}_${i}`, keyVerified(workspaceId, i, time));
      }
    },
  };
}

describe("the analytics pipeline: JetStream to ClickHouse to GetVerifications", () => {
  it("lands exactly N published verifications and splits them by outcome, tag and key", async () => {
    const nats = await connect({ servers: testNatsUrl() });
    cleanups.push(() => nats.close());
    const p = await pipeline({ nats });
    const N = 1_200;
    const time = Date.now();
    p.publish(0, N, time);
    // Publishing some again (a publisher retry) must not count twice.
    p.publish(0, 100, time);
    await p.sink.flush();
    await eventually(async () => (await stored(p.db, p.workspaceId)) >= N);
    await new Promise((r) => setTimeout(r, 500));
    expect(await stored(p.db, p.workspaceId)).toBe(N);

    const deps: AnalyticsDeps = {
      store: new ClickHouseAnalyticsStore(p.db.client),
      log,
      ready: async () => true,
    };
    const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
    const caller = callerOf(p.workspaceId, "api.*.read_analytics");
    const range = { start: BigInt(time - 3_600_000), end: BigInt(time + 3_600_000) };
    const all = await client.getVerifications({ caller, ...range });
    const sum = (buckets: typeof all.buckets, f: "total" | "valid" | "rateLimited" | "usageExceeded") =>
      buckets.reduce((n, b) => n + b[f], 0n);
    expect(sum(all.buckets, "total")).toBe(BigInt(N));
    expect(sum(all.buckets, "valid")).toBe(BigInt(N / 2));
    expect(sum(all.buckets, "rateLimited")).toBe(BigInt(N / 4));
    expect(sum(all.buckets, "usageExceeded")).toBe(BigInt(N / 4));

    const byTag = await client.getVerifications({ caller, ...range, groupBy: GroupBy.TAG });
    const tagTotals = Object.fromEntries(
      ["env=prod", "path=/a"].map((t) => [
        t,
        sum(
          byTag.buckets.filter((b) => b.group === t),
          "total",
        ),
      ]),
    );
    expect(tagTotals).toEqual({ "env=prod": BigInt((2 * N) / 3), "path=/a": BigInt(N / 3) });
    const tagged = await client.getVerifications({ caller, ...range, tags: ["env=prod", "path=/a"] });
    expect(sum(tagged.buckets, "total")).toBe(BigInt(N / 3));
    const key0 = await client.getVerifications({ caller, ...range, keyId: "key_0" });
    expect(sum(key0.buckets, "total")).toBe(BigInt(N / 3));
    expect(p.consumer.stats().inserted).toBe(N);
  });

  it("counts a batch once when its insert succeeded but the answer was lost", async () => {
    const nats = await connect({ servers: testNatsUrl() });
    cleanups.push(() => nats.close());
    let lost = 0;
    const p = await pipeline({
      nats,
      // The first insert lands in ClickHouse, then fails as if the connection dropped before the answer.
      wrap: (store) =>
        Object.assign(Object.create(store) as AnalyticsStore, {
          insertVerifications: async (rows: Parameters<AnalyticsStore["insertVerifications"]>[0]) => {
            const added = await store.insertVerifications(rows);
            if (lost++ === 0) throw new Error("socket hang up");
            return added;
          },
        }),
    });
    p.publish(0, 300);
    await eventually(async () => p.consumer.stats().acked === 300);
    expect(await stored(p.db, p.workspaceId)).toBe(300);
    expect(p.consumer.stats()).toMatchObject({
      failedInserts: 1,
      inserted: 300 - p.consumer.stats().duplicates,
    });
    expect(p.consumer.stats().duplicates).toBeGreaterThan(0);
  });

  it("loses nothing when NATS restarts in the middle of a stream", async () => {
    const server = await ownNatsServer();
    cleanups.push(() => server.close());
    const nats = await connect({
      servers: server.url,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 100,
    });
    cleanups.push(() => nats.close());
    const p = await pipeline({ nats });

    const N = 3_000;
    // A steady stream: 100 events every 20 ms, NATS killed a third of the way in and restarted.
    for (let i = 0; i < N; i += 100) {
      p.publish(i, i + 100);
      if (i === 1_000) {
        await server.stop();
        await new Promise((r) => setTimeout(r, 500));
        await server.start();
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await p.sink.flush(20_000);
    expect(p.sink.stats().dropped).toBe(0);
    await eventually(async () => (await stored(p.db, p.workspaceId)) >= N, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(await stored(p.db, p.workspaceId)).toBe(N);
  });

  it("delays but loses nothing while ClickHouse is unreachable", async () => {
    const nats = await connect({ servers: testNatsUrl() });
    cleanups.push(() => nats.close());
    const target = new URL(testClickHouseUrl());
    const proxy = await tcpProxy(Number(target.port || 8123));
    cleanups.push(() => proxy.stop());
    const p = await pipeline({
      nats,
      clickhouseUrl: async (db) => {
        const url = new URL(db.url);
        url.host = `127.0.0.1:${proxy.port}`;
        return url.toString();
      },
    });

    p.publish(0, 500);
    // Acknowledged, not only stored: cutting the proxy between the insert and its answer is a different case
    // (the batch is retried and found already stored), which the redelivery tests cover.
    await eventually(async () => p.consumer.stats().acked === 500);
    expect(await stored(p.db, p.workspaceId)).toBe(500);

    await proxy.stop();
    p.publish(500, 1_000);
    await p.sink.flush();
    await eventually(async () => p.consumer.stats().failedInserts >= 2);
    expect(await stored(p.db, p.workspaceId)).toBe(500);

    await proxy.start();
    await eventually(async () => (await stored(p.db, p.workspaceId)) >= 1_000, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(await stored(p.db, p.workspaceId)).toBe(1_000);
    expect(p.consumer.stats()).toMatchObject({ inserted: 1_000, acked: 1_000, duplicates: 0 });
  });

  it("works through a backlog of 30,000 events while ClickHouse is slow and then briefly down: counts move, the loop's mark advances, nothing is lost", async () => {
    const nats = await connect({ servers: testNatsUrl() });
    cleanups.push(() => nats.close());
    const progress = new LoopProgress("analytics.consumer.test");
    let down = false;
    const p = await pipeline({
      nats,
      batchSize: 2_000,
      progress,
      // Slow: each insert waits 300 ms first. Down: it fails, as a refused connection would.
      wrap: (store) =>
        Object.assign(Object.create(store) as AnalyticsStore, {
          insertVerifications: async (rows: Parameters<AnalyticsStore["insertVerifications"]>[0]) => {
            await new Promise((r) => setTimeout(r, 300));
            if (down) throw new Error("connect ECONNREFUSED");
            return store.insertVerifications(rows);
          },
        }),
    });
    const N = 30_000;
    p.publish(0, N);
    await p.sink.flush(30_000);
    expect(p.sink.stats().dropped).toBe(0);

    // Slow, with a backlog: inserts and marks keep coming while events still wait.
    await eventually(async () => p.consumer.stats().inserted > 0, 30_000);
    const first = { inserted: p.consumer.stats().inserted, marks: progress.marks, at: progress.lastAt };
    await eventually(async () => p.consumer.stats().inserted >= first.inserted + 4_000, 30_000);
    expect(progress.marks).toBeGreaterThan(first.marks);
    expect(progress.lastAt).toBeGreaterThan(first.at);
    expect(p.consumer.stats().inserted).toBeLessThan(N);

    // Down for a while: nothing stored, nothing acknowledged, nothing lost.
    down = true;
    const failuresBefore = p.consumer.stats().failedInserts;
    await eventually(async () => p.consumer.stats().failedInserts >= failuresBefore + 3, 30_000);
    const during = p.consumer.stats().inserted;
    down = false;

    // Back: the rest lands, exactly once, and the mark moves on.
    await eventually(async () => (await stored(p.db, p.workspaceId)) >= N, 60_000);
    expect(p.consumer.stats().inserted).toBeGreaterThan(during);
    await new Promise((r) => setTimeout(r, 500));
    expect(await stored(p.db, p.workspaceId)).toBe(N);
    expect(progress.lastAt).toBeGreaterThan(first.at);
  }, 120_000);
});

/** A TCP proxy to ClickHouse that can be stopped (connections refused, open ones cut) and started again on the same port. */
async function tcpProxy(targetPort: number) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const start = async () => {
    server = net.createServer((client) => {
      const upstream = net.connect(targetPort, "127.0.0.1");
      sockets.add(client);
      sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on("error", close).on("close", close);
      upstream.on("error", close).on("close", close);
    });
    await new Promise<void>((r) => server?.listen(port, "127.0.0.1", r));
    port = (server.address() as net.AddressInfo).port;
  };
  await start();
  return {
    get port() {
      return port;
    },
    start,
    async stop() {
      for (const s of sockets) s.destroy();
      sockets.clear();
      await new Promise((r) => (server ? server.close(r) : r(undefined)));
    },
  };
}
