import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { CallerSchema, DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { ownRedis } from "@latchkey/ratelimit/testing/redis";
import {
  CONTEXTS,
  connectNats,
  DOMAIN_EVENT_SUBJECT,
  EVENT_BATCH_HEADER,
  EVENTS_STREAM,
  encodeEventBatch,
  ensureEventsStream,
  GATEWAY_PROCESS,
  internalTransport,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { ownNatsServer } from "@latchkey/runtime/testing/nats-server";
import { tcpProxy } from "@latchkey/runtime/testing/tcp-proxy";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import {
  freePort,
  holdToContract,
  internalAuth,
  internalSecret,
  type Proc,
  startProcess,
} from "./testing/process-stack.ts";

// Every process waits for its dependencies rather than exiting on the first error: started with
// PostgreSQL away (a port nothing listens on, then a proxy to the real server there) and NATS not
// yet running, it stays alive, answers /readyz 503 naming what it waits for and every request 503,
// logs one line per try, and serves once they come. A bad setting still ends it at once.

const root = join(import.meta.dirname, "..");
const clickhouseBase = process.env["TEST_CLICKHOUSE_URL"] ?? "http://127.0.0.1:8123";
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}, 60_000);

/** A fresh database reached through a proxy that is not running yet. */
async function databaseBehindProxy(): Promise<{
  db: TestDatabase;
  url: string;
  proxy: ReturnType<typeof tcpProxy>;
}> {
  const db = await createTestDatabase();
  cleanups.push(() => db.drop());
  const real = new URL(db.url);
  const proxy = tcpProxy(await freePort(), { host: real.hostname, port: Number(real.port || 5432) });
  cleanups.push(() => proxy.stop());
  const url = new URL(db.url);
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  return { db, url: url.toString(), proxy };
}

async function lateNats() {
  const nats = await ownNatsServer({ started: false });
  cleanups.push(() => nats.close());
  return nats;
}

/** The JSON log lines a process wrote about waiting for `dependency`. */
function waits(proc: Proc, dependency: string): { tries: number; err: string; msg: string }[] {
  return proc
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{") && line.includes(`"dependency":"${dependency}"`))
    .map((line) => JSON.parse(line));
}

async function until(what: string, check: () => Promise<boolean> | boolean, withinMs = 30_000) {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const probe = async (proc: Proc, path: "/healthz" | "/readyz") => {
  const res = await fetch(`${proc.url}${path}`);
  return { status: res.status, body: (await res.json()) as any };
};

/** It waits for `dependency`: alive, not ready, and at least two tries logged, one line each, numbered in turn. */
async function expectWaiting(proc: Proc, dependency: string) {
  await until(`${proc.name} logs two tries of ${dependency}`, () => waits(proc, dependency).length >= 2);
  const starting = { status: "starting", waitingFor: dependency };
  expect(await probe(proc, "/healthz")).toEqual({ status: 200, body: starting });
  expect(await probe(proc, "/readyz")).toEqual({ status: 503, body: starting });
  const lines = waits(proc, dependency);
  expect(lines.map((l) => l.tries)).toEqual(lines.map((_, i) => i + 1));
  expect(lines[0]!.msg).toBe(`${dependency} is not available yet; trying again`);
  expect(proc.child.exitCode).toBeNull();
}

/** Stops it with SIGTERM and answers its exit code. */
async function stopped(proc: Proc): Promise<number | null> {
  await proc.stop();
  return proc.child.exitCode;
}

describe("a service started before its dependencies", { timeout: 120_000 }, () => {
  it("keys waits for PostgreSQL, then NATS, answering RPCs UNAVAILABLE meanwhile (a gateway in front not ready), and serves once they come", async () => {
    const { url, proxy } = await databaseBehindProxy();
    const nats = await lateNats();
    const keys = await startProcess(
      "keys-waiting",
      CONTEXTS.keys.entry,
      { DATABASE_URL: url, NATS_URL: nats.url },
      undefined,
      [],
      "alive",
    );
    cleanups.push(() => keys.stop());
    const client = createClient(KeysService, internalTransport(keys.url, { auth: internalAuth }));
    const caller = create(CallerSchema, { workspaceId: "ws_waiting", permissions: ["*"] });
    const getApi = () =>
      client.getApi({ caller, apiId: "api_missing" }).then(
        () => "answered",
        (e: unknown) => ConnectError.from(e),
      );

    await expectWaiting(keys, "PostgreSQL");
    expect(waits(keys, "PostgreSQL")[0]!.err).toContain("ECONNREFUSED");
    // A gateway in front of it (as every service it needs) is not ready while keys waits.
    const gateway = await startProcess("gateway-before-keys", GATEWAY_PROCESS.entry, {
      NATS_URL: "",
      METRICS_PORT: "0",
      KEYS_URL: keys.url,
      RATELIMIT_URL: keys.url,
      IDENTITY_URL: keys.url,
    });
    cleanups.push(() => gateway.stop());
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);
    const refused = await getApi();
    expect(refused).toBeInstanceOf(ConnectError);
    expect([(refused as ConnectError).code, (refused as ConnectError).rawMessage]).toEqual([
      Code.Unavailable,
      "keys service is starting: waiting for PostgreSQL; retry shortly",
    ]);

    await proxy.start();
    await expectWaiting(keys, "NATS");
    await nats.start();
    await until("keys is ready", async () => (await probe(keys, "/readyz")).status === 200);
    expect(await probe(keys, "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
    const served = await getApi();
    expect((served as ConnectError).code).toBe(Code.NotFound);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    await gateway.stop();
    expect(await stopped(keys)).toBe(0);
  });

  it("ratelimit counting in Redis waits for Redis, then serves", async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const redis = await ownRedis();
    cleanups.push(() => redis.stop());
    await redis.stop();
    const ratelimit = await startProcess(
      "ratelimit-waiting",
      CONTEXTS.ratelimit.entry,
      { DATABASE_URL: db.url, NATS_URL: "", RATELIMIT_STORE: "redis", REDIS_URL: redis.url },
      undefined,
      [],
      "alive",
    );
    cleanups.push(() => ratelimit.stop());
    await expectWaiting(ratelimit, "Redis");
    await redis.start();
    await until("ratelimit is ready", async () => (await probe(ratelimit, "/readyz")).status === 200);
    expect(await probe(ratelimit, "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
    expect(await stopped(ratelimit)).toBe(0);
  });

  it("the gateway waits for NATS, answering requests 503 in the API's error shape meanwhile", async () => {
    const nats = await lateNats();
    const gateway = await startProcess(
      "gateway-waiting",
      GATEWAY_PROCESS.entry,
      { NATS_URL: nats.url, METRICS_PORT: "0" },
      undefined,
      [],
      "alive",
    );
    cleanups.push(() => gateway.stop());
    await expectWaiting(gateway, "NATS");
    const res = await fetch(`${gateway.url}/v2/apis.createApi`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer lk_root_x" },
      body: JSON.stringify({ name: "api" }),
    });
    const body = (await res.json()) as any;
    expect([res.status, body.error]).toEqual([
      503,
      {
        title: "Service Unavailable",
        detail: "gateway is starting: waiting for NATS; retry shortly",
        status: 503,
        type: "https://unkey.com/docs/errors/unkey/application/service_unavailable",
      },
    ]);
    holdToContract("apis.createApi", res.status, body);
    await nats.start();
    await until(
      "the gateway has started",
      async () => (await probe(gateway, "/healthz")).body.status === "ok",
    );
    expect(await stopped(gateway)).toBe(0);
  });
});

describe("npm start started before its dependencies", { timeout: 180_000 }, () => {
  it("waits for PostgreSQL, then NATS, answering the API 503 meanwhile, and serves once they come", async () => {
    const { url, proxy } = await databaseBehindProxy();
    const nats = await lateNats();
    const dataDir = mkdtempSync(join(tmpdir(), "latchkey-waiting-"));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const database = `latchkey_waiting_${randomBytes(4).toString("hex")}`;
    cleanups.push(() =>
      fetch(`${clickhouseBase}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS ${database}`)}`, {
        method: "POST",
      }),
    );
    const rootKey = `lk_root_waiting_${randomBytes(8).toString("hex")}`;
    const latchkey = await startProcess(
      "latchkey-waiting",
      "apps/latchkey/src/start.ts",
      {
        DATA_DIR: dataDir,
        DATABASE_URL: url,
        NATS_URL: nats.url,
        CLICKHOUSE_URL: `${clickhouseBase}/${database}`,
        LATCHKEY_ROOT_KEY: rootKey,
        CONSOLE: "false",
        METRICS_PORT: "0",
        RATELIMIT_STORE: "",
      },
      undefined,
      [],
      "alive",
    );
    cleanups.push(() => latchkey.stop());
    const createApi = async () => {
      const res = await fetch(`${latchkey.url}/v2/apis.createApi`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
        body: JSON.stringify({ name: "waited" }),
      });
      const body = (await res.json()) as any;
      holdToContract("apis.createApi", res.status, body);
      return { status: res.status, body };
    };

    await expectWaiting(latchkey, "PostgreSQL");
    const refused = await createApi();
    expect([refused.status, refused.body.error.detail]).toEqual([
      503,
      "Latchkey is starting: waiting for PostgreSQL; retry shortly",
    ]);

    await proxy.start();
    await expectWaiting(latchkey, "NATS");
    await nats.start();
    await until(
      "npm start has started",
      async () => (await probe(latchkey, "/healthz")).body.status === "ok",
      60_000,
    );
    expect(latchkey.output()).toContain("Latchkey is listening on");
    const served = await createApi();
    expect(served.status).toBe(200);
    expect(served.body.data.apiId).toMatch(/^api_/);
    expect(await stopped(latchkey)).toBe(0);
  });
});

describe("npm start with a backlog in the events stream", { timeout: 180_000 }, () => {
  it("starts without nats-server seeing a slow consumer: each consumer on a connection of its own, pulling a few MiB at a time", async () => {
    const monitor = await freePort();
    const nats = await ownNatsServer({ args: ["-m", String(monitor)] });
    cleanups.push(() => nats.close());
    // 88 MiB of domain events, more than nats-server lets wait for one connection (max_pending,
    // 64 MiB): analytics' consumer reads the whole stream at its first start (and ignores these).
    const filler = await connectNats(nats.url, "filler");
    await ensureEventsStream(filler);
    const js = jetstream(filler);
    const batch = headers();
    batch.set(EVENT_BATCH_HEADER, "1");
    for (let m = 0; m < 200; m += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          js.publish(
            DOMAIN_EVENT_SUBJECT,
            encodeEventBatch(
              Array.from({ length: 100 }, (_, e) => ({
                id: `ev_${m + i}_${e}`,
                data: toBinary(
                  DomainEventSchema,
                  create(DomainEventSchema, {
                    id: `ev_${m + i}_${e}`,
                    type: "key.created",
                    workspaceId: "ws_backlog",
                    occurredAt: BigInt(Date.now()),
                    dataJson: JSON.stringify({ pad: "p".repeat(4_500) }),
                  }),
                ),
              })),
            ),
            { headers: batch },
          ),
        ),
      );
    }
    await filler.close();
    const { db } = await databaseBehindProxy();
    const dataDir = mkdtempSync(join(tmpdir(), "latchkey-backlog-"));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const database = `latchkey_backlog_${randomBytes(4).toString("hex")}`;
    cleanups.push(() =>
      fetch(`${clickhouseBase}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS ${database}`)}`, {
        method: "POST",
      }),
    );
    const latchkey = await startProcess("latchkey-backlog", "apps/latchkey/src/start.ts", {
      DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      NATS_URL: nats.url,
      CLICKHOUSE_URL: `${clickhouseBase}/${database}`,
      CONSOLE: "false",
      METRICS_PORT: "0",
      RATELIMIT_STORE: "",
    });
    cleanups.push(() => latchkey.stop());
    const connz = (await (await fetch(`http://127.0.0.1:${monitor}/connz`)).json()) as {
      connections: { name: string }[];
    };
    expect(connz.connections.map((c) => c.name).sort()).toEqual([
      "latchkey",
      "latchkey-analytics",
      "latchkey-webhooks",
    ]);
    const nc = await connectNats(nats.url, "test");
    cleanups.push(() => nc.close());
    const jsm = await jetstreamManager(nc);
    await until(
      "analytics has read the backlog",
      async () => (await jsm.consumers.info(EVENTS_STREAM, "analytics")).num_pending === 0,
      90_000,
    );
    expect(nats.log()).not.toContain("Slow Consumer");
    expect(latchkey.output()).not.toContain("is not available yet");
    expect(await stopped(latchkey)).toBe(0);
  });
});

describe("a bad setting while the dependencies are away", () => {
  /** Runs an entrypoint until it exits, at most 20 s. */
  const run = (entry: string, env: Record<string, string>) =>
    new Promise<{ code: number | null; output: string; ms: number }>((resolve) => {
      const started = Date.now();
      const child = execFile(
        process.execPath,
        ["--import", "tsx", join(root, entry)],
        {
          env: {
            ...process.env,
            LOG_LEVEL: "info",
            PORT: "0",
            LATCHKEY_INTERNAL_SECRET: internalSecret,
            ...env,
          },
          timeout: 20_000,
        },
        (_err, stdout, stderr) =>
          resolve({ code: child.exitCode, output: `${stdout}${stderr}`, ms: Date.now() - started }),
      );
    });
  const away = { DATABASE_URL: "postgres://postgres@127.0.0.1:1/latchkey", NATS_URL: "nats://127.0.0.1:1" };

  it("ends a service at once with its message, without waiting for them", async () => {
    const { code, output } = await run(CONTEXTS.keys.entry, { ...away, RATELIMIT_FAIL_OPEN: "yes" });
    expect(code).toBe(1);
    expect(output).toContain(
      "keys service cannot start: RATELIMIT_FAIL_OPEN must be true or false, got 'yes'",
    );
    expect(output).not.toContain("is not available yet");
  }, 30_000);

  it("ends npm start at once with its message, without waiting for them", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "latchkey-bad-setting-"));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const { code, output } = await run("apps/latchkey/src/start.ts", {
      ...away,
      DATA_DIR: dataDir,
      CLICKHOUSE_URL: "",
      KEY_CACHE_SIZE: "0",
    });
    expect(code).toBe(1);
    expect(output).toContain(
      "Latchkey cannot start: KEY_CACHE_SIZE must be an integer of at least 1, got '0'",
    );
    expect(output).not.toContain("is not available yet");
  }, 30_000);
});
