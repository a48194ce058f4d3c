import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ownRedis } from "@latchkey/ratelimit/testing/redis";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, startProcess } from "./testing/process-stack.ts";

// Two `npm start` processes behind one load balancer, on one PostgreSQL, with RATELIMIT_STORE=redis:
// each budget is one, whichever process a request reaches, and survives a process's restart.
let redis: Awaited<ReturnType<typeof ownRedis>>;
let db: TestDatabase;
const procs: Proc[] = [];
const rootKey = `lk_root_e2e_${Math.random().toString(36).slice(2)}`;
const dataDir = mkdtempSync(join(tmpdir(), "latchkey-start-redis-"));

const start = (name: string) =>
  startProcess(name, "apps/latchkey/src/start.ts", {
    DATA_DIR: dataDir,
    DATABASE_URL: db.url,
    NATS_URL: "",
    CLICKHOUSE_URL: "",
    CONSOLE: "false",
    METRICS_PORT: "0",
    LATCHKEY_ROOT_KEY: rootKey,
    RATELIMIT_STORE: "redis",
    REDIS_URL: redis.url,
  });

beforeAll(async () => {
  redis = await ownRedis();
  db = await createTestDatabase();
  // One at a time: each applies the migrations at start, under an advisory lock.
  procs.push(await start("latchkey-a"));
  procs.push(await start("latchkey-b"));
}, 120_000);

afterAll(async () => {
  for (const p of procs) await p.stop();
  await redis?.stop();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function limit(proc: Proc, identifier: string): Promise<boolean> {
  const res = await fetch(`${proc.url}/v2/ratelimits.limit`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
    // A day's window: the test never runs across a window's end, where the count carried over is rounded down.
    body: JSON.stringify({ namespace: "shared", identifier, limit: 25, duration: 86_400_000 }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { success: boolean } }).data.success;
}

describe("npm start with RATELIMIT_STORE=redis, two processes", () => {
  it("allows exactly the limit of 100 concurrent requests spread over both, and keeps the count across a restart", async () => {
    const [a, b] = procs as [Proc, Proc];
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => limit(i % 2 ? a : b, "user_1")));
    expect(answers.filter(Boolean)).toHaveLength(25);
    // Each process alone would have allowed 25 of its own 50: one budget, not two.

    await b.stop();
    procs[1] = await start("latchkey-b-again");
    expect(await limit(procs[1]!, "user_1")).toBe(false);
    expect(await limit(procs[1]!, "user_2")).toBe(true);
  }, 60_000);
});
