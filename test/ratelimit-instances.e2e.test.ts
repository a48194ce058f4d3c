import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, startProcess } from "./testing/process-stack.ts";

// Two `npm start` processes on one PostgreSQL, counting rate limits in their own memory (the default):
// each would count every budget alone, so the second refuses to start unless told it may.
let db: TestDatabase;
const procs: Proc[] = [];
const rootKey = `lk_root_e2e_${Math.random().toString(36).slice(2)}`;
const dataDir = mkdtempSync(join(tmpdir(), "latchkey-instances-"));

const start = (name: string, extra: Record<string, string> = {}) =>
  startProcess(name, "apps/latchkey/src/start.ts", {
    DATA_DIR: dataDir,
    DATABASE_URL: db.url,
    NATS_URL: "",
    CLICKHOUSE_URL: "",
    CONSOLE: "false",
    METRICS_PORT: "0",
    LATCHKEY_ROOT_KEY: rootKey,
    RATELIMIT_STORE: "",
    ...extra,
  }).then((p) => {
    procs.push(p);
    return p;
  });

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  for (const p of procs) await p.stop();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function limit(proc: Proc, identifier: string): Promise<boolean> {
  const res = await fetch(`${proc.url}/v2/ratelimits.limit`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
    body: JSON.stringify({ namespace: "shared", identifier, limit: 5, duration: 86_400_000 }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { success: boolean } }).data.success;
}

describe("npm start counting rate limits in memory, two processes on one database", () => {
  it("refuses the second with an exit code of 1 and a message saying to use RATELIMIT_STORE=redis; allows it with RATELIMIT_ALLOW_UNSHARED_MEMORY=true; leaves no registration after a clean stop", async () => {
    const first = await start("latchkey-a");
    const refused = await start("latchkey-b").then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(refused).toContain("latchkey-b exited with 1");
    expect(refused).toContain(
      "Another Latchkey process counts rate limits in its own memory on this database",
    );
    expect(refused).toContain("set RATELIMIT_STORE=redis and REDIS_URL on every process");
    // The first serves on, alone: one budget of 5.
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await limit(first, "user_1"));
    expect(answers).toEqual([true, true, true, true, true, false]);

    // Told it may, a second starts beside the first and counts a budget of its own.
    const second = await start("latchkey-c", { RATELIMIT_ALLOW_UNSHARED_MEMORY: "true" });
    expect(await limit(second, "user_1")).toBe(true);
    await second.stop();

    // A clean stop removes each one's registration, so the next start has nothing to wait for.
    await first.stop();
    expect(await db.sql`SELECT host FROM ratelimit_memory_instances`).toEqual([]);
    const again = await start("latchkey-d");
    expect(await limit(again, "user_2")).toBe(true);
  }, 120_000);
});
