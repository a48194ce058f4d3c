import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "./bundle.ts";
import { freePort } from "./bundle-process.ts";

// scripts/services.sh, which `npm test` runs first: on spare ports and a data folder of the test's own it starts
// PostgreSQL, NATS with JetStream, ClickHouse and Redis from the installed packages; a second run changes
// nothing; `stop` stops them and only them. The shared servers the other tests use are never touched.

const run = promisify(execFile);
const script = join(repoRoot, "scripts", "services.sh");
// The postgres user runs the cluster when the test runs as root, so the folder must be open to it.
const dir = mkdtempSync(join(tmpdir(), "latchkey-services-"));
chmodSync(dir, 0o755);

async function spare(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
const [pg, nats, chHttp, chTcp, redis] = (await spare(5)) as [number, number, number, number, number];
const spareEnv = {
  PG_PORT: String(pg),
  NATS_PORT: String(nats),
  CH_HTTP_PORT: String(chHttp),
  CH_TCP_PORT: String(chTcp),
  REDIS_PORT: String(redis),
};

async function services(env: Record<string, string>, ...args: string[]) {
  const { stdout } = await run("bash", [script, ...args], {
    env: { ...process.env, ...env, SERVICES_DIR: dir, SERVICES_WITH: "apt" },
    timeout: 120_000,
  });
  return stdout.trim().split("\n").filter(Boolean);
}

/** The first line a server sends on connect after `send` (nothing: what it greets with), or null. */
function firstLine(port: number, send = ""): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let data = "";
    const done = (line: string | null) => {
      socket.destroy();
      resolve(line);
    };
    socket.setTimeout(3000, () => done(null));
    socket.on("connect", () => send && socket.write(send));
    socket.on("data", (chunk) => {
      data += chunk.toString();
      if (data.includes("\n")) done(data.slice(0, data.indexOf("\n")).trim());
    });
    socket.on("error", () => done(null));
  });
}

async function psql(port: number, query: string): Promise<string> {
  const { stdout } = await run("psql", [
    "-h",
    "127.0.0.1",
    "-p",
    String(port),
    "-U",
    "postgres",
    "-Atc",
    query,
  ]);
  return stdout.trim();
}

/** One query over HTTP, its connection closed after it (ClickHouse's shutdown waits for an idle keep-alive one). */
async function clickhouse(port: number, query: string): Promise<string> {
  const { stdout } = await run("curl", ["-sS", "--data-binary", query, `http://127.0.0.1:${port}/`]);
  return stdout.trim();
}

const pidOf = (file: string) => readFileSync(join(dir, file), "utf8").split("\n")[0]!.trim();

afterAll(async () => {
  await services(spareEnv, "stop").catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

describe("scripts/services.sh", () => {
  let pids: string[] = [];

  it("starts each server that does not answer, on its port, from its data folder, and prints its URL", async () => {
    expect(await services(spareEnv)).toEqual([
      `PostgreSQL  postgres://postgres@127.0.0.1:${pg}/postgres  started (apt, ${dir})`,
      `NATS        nats://127.0.0.1:${nats}  (JetStream)  started (apt, ${dir})`,
      `ClickHouse  http://127.0.0.1:${chHttp}  started (apt, ${dir})`,
      `Redis       redis://127.0.0.1:${redis}  started (apt, ${dir})`,
    ]);
    expect(await psql(pg, "SELECT datname FROM pg_database WHERE datname = 'test'")).toBe("test");
    expect(await psql(pg, "SHOW fsync")).toBe("off");
    expect(await firstLine(nats)).toContain('"jetstream":true');
    // Debian's 18.16 takes LowCardinality columns only with the setting in the default profile.
    await clickhouse(chHttp, "CREATE TABLE default.lc (s LowCardinality(String)) ENGINE = Memory");
    expect(await clickhouse(chHttp, "SELECT count() FROM system.tables WHERE name = 'lc'")).toBe("1");
    expect(await firstLine(redis, "PING\r\n")).toBe("+PONG");
    pids = [pidOf("postgres/postmaster.pid"), pidOf("nats/nats.pid"), pidOf("clickhouse/clickhouse.pid")];
    pids.push(pidOf("redis/redis.pid"));
  }, 120_000);

  it("changes nothing on a second run: every server answers, the same processes", async () => {
    const started = Date.now();
    const lines = await services(spareEnv);
    expect(lines.map((l) => l.endsWith("already answering"))).toEqual([true, true, true, true]);
    expect([
      pidOf("postgres/postmaster.pid"),
      pidOf("nats/nats.pid"),
      pidOf("clickhouse/clickhouse.pid"),
      pidOf("redis/redis.pid"),
    ]).toEqual(pids);
    // Four protocol checks and no start: well under a second on an idle machine.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("prints the URLs for the tests, and where the query user of the ClickHouse it runs goes", async () => {
    expect(await services(spareEnv, "env")).toEqual([
      `TEST_DATABASE_URL=postgres://postgres@127.0.0.1:${pg}/postgres`,
      `TEST_NATS_URL=nats://127.0.0.1:${nats}`,
      `TEST_CLICKHOUSE_URL=http://127.0.0.1:${chHttp}`,
      `TEST_REDIS_URL=redis://127.0.0.1:${redis}`,
      `CLICKHOUSE_HTTP=http://127.0.0.1:${chHttp}`,
      `CLICKHOUSE_USERS_DIR=${dir}/clickhouse/users.d`,
    ]);
  });

  it("stop stops what it started, and a second stop finds nothing to stop", async () => {
    expect(await services(spareEnv, "stop")).toEqual([
      `PostgreSQL  stopped (${dir}/postgres)`,
      `NATS  stopped (${dir}/nats)`,
      `ClickHouse  stopped (${dir}/clickhouse)`,
      `Redis  stopped (${dir}/redis)`,
    ]);
    for (const port of [pg, nats, chHttp, chTcp, redis]) expect(await firstLine(port, "PING\r\n")).toBeNull();
    expect(await services(spareEnv, "stop")).toEqual([]);
  }, 60_000);

  it("leaves servers it did not start alone: the shared ones answer, are not started again, and survive stop", async () => {
    const url = (name: string, fallback: string) => new URL(process.env[name] ?? fallback);
    const shared = {
      PG_PORT: url("TEST_DATABASE_URL", "postgres://127.0.0.1:5432").port || "5432",
      NATS_PORT: url("TEST_NATS_URL", "nats://127.0.0.1:4222").port || "4222",
      CH_HTTP_PORT: url("TEST_CLICKHOUSE_URL", "http://127.0.0.1:8123").port || "8123",
      REDIS_PORT: url("TEST_REDIS_URL", "redis://127.0.0.1:6379").port || "6379",
    };
    const lines = await services(shared);
    expect(lines.map((l) => l.endsWith("already answering"))).toEqual([true, true, true, true]);
    expect(await services(shared, "stop")).toEqual([]);
    expect(await firstLine(Number(shared.REDIS_PORT), "PING\r\n")).toBe("+PONG");
    expect(await firstLine(Number(shared.NATS_PORT))).toContain('"jetstream":true');
    expect(await clickhouse(Number(shared.CH_HTTP_PORT), "SELECT 1")).toBe("1");
    expect(await psql(Number(shared.PG_PORT), "SELECT 1")).toBe("1");
  });
});
