import { spawnSync } from "node:child_process";
import { connect, createLogger, loopProgress, migrate, type Sql } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { recordingLog } from "../testing/in-memory-ratelimit.ts";
import {
  type InstanceOptions,
  type MemoryInstance,
  registerMemoryInstance,
  UnsharedMemoryError,
} from "./instances.ts";
import { ratelimitMigrations } from "./migrations.ts";

// Processes counting rate limits in their own memory on one PostgreSQL: each is modelled by a registration
// of its own `node` (a machine), with a heartbeat and expiry short enough for a test.
let db: TestDatabase;
const open: MemoryInstance[] = [];
const pools: Sql[] = [];
const silent = createLogger("ratelimit", "silent");
const FAST: Omit<InstanceOptions, "node"> = { log: silent, everyMs: 200, ttlMs: 2_000, pollMs: 50 };
const memory = { store: "memory" as const };

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "ratelimit", ratelimitMigrations);
});
afterEach(async () => {
  for (const i of open.splice(0)) await i.close();
  await db.sql`DELETE FROM ratelimit_memory_instances`;
});
afterAll(async () => {
  for (const p of pools) await p.end({ timeout: 5 });
  await db?.drop();
});

async function start(
  node: string,
  over: Partial<InstanceOptions> & { allow?: boolean; sql?: Sql } = {},
): Promise<MemoryInstance> {
  const instance = await registerMemoryInstance(
    over.sql ?? db.sql,
    { ...memory, allowUnsharedMemory: over.allow ?? false },
    { ...FAST, node, ...over },
  );
  open.push(instance!);
  return instance!;
}

const rows = () =>
  db.sql<{ host: string; pid: number; node: string; allowed: boolean }[]>`
    SELECT host, pid, node, allowed FROM ratelimit_memory_instances ORDER BY started_at`;

/** The row a process leaves when it is killed: its last heartbeat `agoMs` ago, expiring a ttl after it. */
const crashed = (node: string, pid: number, agoMs: number, ttlMs = FAST.ttlMs!) => db.sql`
  INSERT INTO ratelimit_memory_instances (id, host, pid, node, allowed, heartbeat_at, expires_at)
  VALUES (${`rli_dead_${pid}`}, 'elsewhere', ${pid}, ${node}, false,
          now() - ${agoMs} * interval '1 millisecond', now() + ${ttlMs - agoMs} * interval '1 millisecond')`;

/** A pid that ran on this machine and no longer does. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

describe("a process counting rate limits in its own memory", () => {
  it("refuses a second one on the same database once it sees the first one's heartbeat, saying to use RATELIMIT_STORE=redis", async () => {
    await start("machine-a");
    const began = Date.now();
    const err = await start("machine-b").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsharedMemoryError);
    expect((err as Error).message).toContain("set RATELIMIT_STORE=redis and REDIS_URL on every process");
    expect((err as Error).message).toContain("RATELIMIT_ALLOW_UNSHARED_MEMORY=true");
    expect((err as Error).message).toContain(`pid ${process.pid}`);
    // Refused at the first heartbeat (every 200 ms), well before the row could have expired (2 s).
    expect(Date.now() - began).toBeLessThan(FAST.ttlMs!);
    expect((await rows()).map((r) => r.node)).toEqual(["machine-a"]);
  });

  it("starts beside another with RATELIMIT_ALLOW_UNSHARED_MEMORY=true, and says so; a third without it is still refused", async () => {
    const { log, warnings } = recordingLog();
    await start("machine-a");
    await start("machine-b", { allow: true, log });
    expect(warnings.map((w) => w.msg)).toEqual([
      expect.stringContaining("RATELIMIT_ALLOW_UNSHARED_MEMORY=true: starting beside another process"),
    ]);
    expect((await rows()).map((r) => [r.node, r.allowed])).toEqual([
      ["machine-a", false],
      ["machine-b", true],
    ]);
    await expect(start("machine-c")).rejects.toBeInstanceOf(UnsharedMemoryError);
  });

  it("after a crash elsewhere, waits out the dead process's row and takes its place once it expires", async () => {
    await crashed("machine-x", 4242, 500);
    const { log, warnings } = recordingLog();
    const began = Date.now();
    await start("machine-b", { log });
    const waited = Date.now() - began;
    // The row had 1.5 s left and no heartbeat came: waited that out, no longer.
    expect(waited).toBeGreaterThanOrEqual(1_200);
    expect(waited).toBeLessThan(8_000);
    expect(warnings).toHaveLength(1);
    expect((await rows()).map((r) => r.node)).toEqual(["machine-b"]);
  });

  it("after a crash on this machine, takes the dead process's row over at once; a live one of this machine is waited on", async () => {
    const pid = deadPid();
    await crashed("machine-a", pid, 0, 60_000);
    const began = Date.now();
    await start("machine-a");
    expect(Date.now() - began).toBeLessThan(1_000);
    expect((await rows()).map((r) => r.pid)).toEqual([process.pid]);
    for (const i of open.splice(0)) await i.close();

    // A row of this machine whose process still runs (this test's parent) is not taken over: it is
    // waited out like any other, and refused once it beats.
    await crashed("machine-a", process.ppid, 0, 60_000);
    const waiting = start("machine-a").then(
      () => "started",
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 300));
    await db.sql`UPDATE ratelimit_memory_instances SET heartbeat_at = now() WHERE pid = ${process.ppid}`;
    expect(await waiting).toBeInstanceOf(UnsharedMemoryError);
  });

  it("never registers when its counters are shared, in Redis or among peers", async () => {
    expect(await registerMemoryInstance(db.sql, { store: "redis" }, { ...FAST, node: "m" })).toBeUndefined();
    expect(
      await registerMemoryInstance(db.sql, { ...memory, peers: true }, { ...FAST, node: "m" }),
    ).toBeUndefined();
    expect(await rows()).toEqual([]);
    // So they never stand in the way of one that counts in memory, nor it in theirs.
    await start("machine-a");
    expect(await registerMemoryInstance(db.sql, { store: "redis" }, { ...FAST, node: "m" })).toBeUndefined();
  });

  it("removes its row on a clean stop, so the next start goes at once", async () => {
    const first = await start("machine-a");
    await first.close();
    expect(await rows()).toEqual([]);
    const began = Date.now();
    await start("machine-b");
    expect(Date.now() - began).toBeLessThan(1_000);
  });

  it("keeps its row alive with a heartbeat past many ttls, marking the loop's progress each time", async () => {
    const progress = loopProgress("ratelimit.instance_heartbeat");
    const marks = progress.marks;
    await start("machine-a", { everyMs: 100, ttlMs: 500 });
    await waitFor(() => progress.marks >= marks + 20, 15_000);
    // Two seconds of heartbeats: four ttls, and the row never lapsed.
    const [row] = await db.sql<{ left: number }[]>`
      SELECT extract(epoch FROM expires_at - now()) * 1000 AS left FROM ratelimit_memory_instances`;
    expect(Number(row!.left)).toBeGreaterThan(0);
    expect(Date.now() - progress.lastAt).toBeLessThan(2_000);
    await expect(start("machine-b", { everyMs: 100, ttlMs: 500 })).rejects.toBeInstanceOf(
      UnsharedMemoryError,
    );
  });

  it("puts its row back, and logs an error, when it finds it gone (it went unheard for a ttl and another took its place)", async () => {
    const { log } = recordingLog();
    const errors: Record<string, unknown>[] = [];
    log.error = ((obj: Record<string, unknown>) => void errors.push(obj)) as typeof log.error;
    const instance = await start("machine-a", { log });
    await db.sql`DELETE FROM ratelimit_memory_instances`;
    await crashed("machine-x", 4242, 0, 60_000);
    await waitFor(async () => (await rows()).length === 2, 10_000);
    await waitFor(() => errors.length === 1, 10_000);
    expect(errors[0]).toMatchObject({ instanceId: instance.id, lapsed: true, others: 1 });
  });

  it("keeps beating while its database pool is saturated with slow queries, and the queries keep moving", async () => {
    // The process's pool: two connections, with 16 callers each queueing a 100 ms query after another.
    const pool = connect(db.url, { max: 2 });
    pools.push(pool);
    const progress = loopProgress("ratelimit.instance_heartbeat");
    await start("machine-a", { sql: pool, everyMs: 200, ttlMs: 4_000 });
    const marks = progress.marks;
    let done = 0;
    let stop = false;
    const callers = Array.from({ length: 16 }, async () => {
      while (!stop) {
        await pool`SELECT pg_sleep(0.1)`;
        done++;
      }
    });
    const until = Date.now() + 3_000;
    let latest = progress.lastAt;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      latest = Math.max(latest, progress.lastAt);
    }
    stop = true;
    await Promise.all(callers);
    // Three seconds with every connection busy: the heartbeat waited its turn and still went on, and
    // the queries behind it kept going (two connections, 100 ms each: about 60).
    expect(progress.marks - marks).toBeGreaterThanOrEqual(3);
    expect(Date.now() - latest).toBeLessThan(3_000);
    expect(done).toBeGreaterThanOrEqual(20);
    await expect(start("machine-b")).rejects.toBeInstanceOf(UnsharedMemoryError);
  }, 30_000);
});

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}
