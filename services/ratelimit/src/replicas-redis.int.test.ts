import { type Client, Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import {
  type Bus,
  createLogger,
  InternalAuth,
  internalTransport,
  MemoryBus,
  migrate,
  type ServedRpc,
  serveRpc,
  TestClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { freePort } from "@latchkey/runtime/testing/free-port";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller, LIMITER } from "../testing/in-memory-ratelimit.ts";
import { dropPrefix, ownRedis, testClient, testRedisUrl, uniquePrefix } from "../testing/redis.ts";
import { createMemoryRatelimitDeps, createRatelimitDeps, type RatelimitDeps } from "./deps.ts";
import { ratelimitMigrations } from "./migrations.ts";
import { ratelimitRoutes } from "./routes.ts";

/**
 * Three replicas in this process with RATELIMIT_STORE=redis, each with its own
 * Redis client and serving over real HTTP, sharing one database, one bus and
 * one Redis, as Deployment replicas behind one Service would.
 */
interface Replica {
  port: number;
  deps: RatelimitDeps;
  served: ServedRpc;
  redis: Redis;
  client: Client<typeof RatelimitService>;
}

let db: TestDatabase;
const bus: Bus = new MemoryBus();
const auth = new InternalAuth(["redis-replicas-test-secret-redis-replicas"]);
const log = createLogger("ratelimit", "silent");
const c = caller("ws_1", ...LIMITER);
const prefixes: string[] = [];
// One clock for every replica, as Redis's own is in production; fixed, so no window ends mid-test
// (crossing one lets floor(previous × weight) admit one more, exactly as one replica would).
const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 5));

async function startReplica(
  port: number,
  prefix: string,
  url = testRedisUrl,
  timeoutMs = 500,
): Promise<Replica> {
  const redis = await testClient(url, timeoutMs);
  const deps = createRatelimitDeps({ sql: db.sql, bus, log, clock, redis: { client: redis, prefix } });
  const served = await serveRpc(ratelimitRoutes(deps), port, undefined, "127.0.0.1", { auth });
  const client = createClient(RatelimitService, internalTransport(`http://127.0.0.1:${port}`, { auth }));
  return { port, deps, served, redis, client };
}

async function stopReplica(r: Replica): Promise<void> {
  await r.served.close();
  await r.deps.close();
  r.redis.disconnect();
}

async function replicas(n: number, url = testRedisUrl, timeoutMs = 500) {
  const prefix = uniquePrefix("replicas");
  prefixes.push(prefix);
  const started: Replica[] = [];
  for (let i = 0; i < n; i++) started.push(await startReplica(await freePort(), prefix, url, timeoutMs));
  return { prefix, replicas: started };
}

const limitOf = (identifier: string, limit: bigint, cost = 1n) => ({
  namespace: "shared",
  identifier,
  limit,
  duration: 60_000n,
  cost,
});

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "ratelimit", ratelimitMigrations);
});

afterAll(async () => {
  for (const p of prefixes) await dropPrefix(testRedisUrl, p);
  await db?.drop();
});

describe("three replicas counting in one Redis", () => {
  it("let exactly as many of 500 concurrent checks through as one replica in memory does (L=100), split across all three", async () => {
    const { replicas: three } = await replicas(3);
    try {
      const one = createClient(
        RatelimitService,
        createRouterTransport(ratelimitRoutes(createMemoryRatelimitDeps({ clock }))),
      );
      for (const identifier of ["user_1", "user_2"]) {
        const [shared, alone] = await Promise.all([
          Promise.all(
            Array.from({ length: 500 }, (_, i) =>
              three[i % 3]!.client.limit({ caller: c, check: limitOf(identifier, 100n) }),
            ),
          ),
          Promise.all(
            Array.from({ length: 500 }, () => one.limit({ caller: c, check: limitOf(identifier, 100n) })),
          ),
        ]);
        const passed = (answers: typeof shared) => answers.filter((a) => a.result?.success).length;
        // Budgets split per replica would admit up to 300.
        expect({ shared: passed(shared), alone: passed(alone) }, identifier).toEqual({
          shared: 100,
          alone: 100,
        });
        const remaining = shared.filter((a) => a.result?.success).map((a) => Number(a.result!.remaining));
        expect(remaining.sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      }
    } finally {
      for (const r of three) await stopReplica(r);
    }
  }, 90_000);

  it("let exactly L of N verifications' named limits through, ten batches of 50 across the replicas (L=100, N=500)", async () => {
    const { replicas: three } = await replicas(3);
    try {
      const verification = {
        workspaceId: "ws_1",
        limits: [{ owner: "id_1", name: "requests", limit: 100n, duration: 60_000n }],
      };
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          three[i % 3]!.client.checkNamedLimits({ groups: Array(50).fill(verification) }),
        ),
      );
      expect(answers.flatMap((a) => a.groups).filter((g) => g.passed)).toHaveLength(100);
    } finally {
      for (const r of three) await stopReplica(r);
    }
  });

  it("count a multiLimit all or nothing whichever replica answers it", async () => {
    const { replicas: three } = await replicas(3);
    try {
      await three[0]!.client.limit({ caller: c, check: limitOf("full", 1n) });
      const res = await three[1]!.client.multiLimit({
        caller: c,
        checks: [limitOf("open", 5n), limitOf("full", 1n)],
      });
      expect(res.passed).toBe(false);
      expect(res.results.map((r) => r.success)).toEqual([true, false]);
      const after = await three[2]!.client.limit({ caller: c, check: limitOf("open", 5n, 0n) });
      expect(after.result?.remaining).toBe(5n);
    } finally {
      for (const r of three) await stopReplica(r);
    }
  });

  it("keep the count across a replica's restart: the new process continues where the old one stopped", async () => {
    const { prefix, replicas: three } = await replicas(3);
    try {
      for (let i = 0; i < 60; i++)
        await three[0]!.client.limit({ caller: c, check: limitOf("restart", 100n) });
      const port = three[0]!.port;
      await stopReplica(three[0]!);
      three[0] = await startReplica(port, prefix);
      const answers = await Promise.all(
        Array.from({ length: 100 }, () =>
          three[0]!.client.limit({ caller: c, check: limitOf("restart", 100n) }),
        ),
      );
      expect(answers.filter((a) => a.result?.success)).toHaveLength(40);
    } finally {
      for (const r of three) await stopReplica(r);
    }
  });
});

describe("replicas while their Redis is down", () => {
  it("answer UNAVAILABLE at once while Redis is stopped, limits and named limits alike, and count again once it is back, without a restart", async () => {
    const server = await ownRedis();
    const { replicas: three } = await replicas(3, server.url, 200);
    try {
      expect(
        (await three[0]!.client.limit({ caller: c, check: limitOf("outage", 10n) })).result?.remaining,
      ).toBe(9n);
      await server.stop();
      const started = performance.now();
      const codes = await Promise.all(
        three.flatMap((r) => [
          r.client.limit({ caller: c, check: limitOf("outage", 10n) }).then(
            () => "answered",
            (err) => ConnectError.from(err).code,
          ),
          r.client
            .checkNamedLimits({
              groups: [
                { workspaceId: "ws_1", limits: [{ owner: "k", name: "n", limit: 5n, duration: 1_000n }] },
              ],
            })
            .then(
              () => "answered",
              (err) => ConnectError.from(err).code,
            ),
        ]),
      );
      expect(codes).toEqual(Array(6).fill(Code.Unavailable));
      // Well under keys' deadline (2 s), so keys applies RATELIMIT_FAIL_OPEN rather than time out.
      expect(performance.now() - started).toBeLessThan(1_000);
      await server.start();
      const back = performance.now();
      // Every replica is back, each on its own connection, retried every 500 ms at most.
      const remaining: (bigint | undefined)[] = [];
      for (const r of three) {
        let answer: bigint | undefined;
        while (answer === undefined && performance.now() - back < 5_000) {
          answer = await r.client.limit({ caller: c, check: limitOf("outage", 10n) }).then(
            (a) => a.result?.remaining,
            () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 50)),
          );
        }
        remaining.push(answer);
      }
      expect(remaining).toEqual([9n, 8n, 7n]); // this Redis kept nothing across its restart
      expect(performance.now() - back).toBeLessThan(3_000);
    } finally {
      for (const r of three) await stopReplica(r);
      await server.stop();
    }
  });
});
