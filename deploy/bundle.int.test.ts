import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
// deploy/ depends on no workspace package (its devDependencies are build and test tools only),
// so the runtime's test helper is imported by path.
import { CONTEXTS } from "../packages/runtime/src/contexts.ts";
import { createTestDatabase, type TestDatabase } from "../packages/runtime/testing/database.ts";
import { bundle, repoRoot } from "./bundle.ts";
import { freePort, killBundles, startBundle, waitForOk } from "./bundle-process.ts";
import { components } from "./components.ts";
import { type EnvReads, envReads } from "./env-reads.ts";

// The bundles the image runs, each started against real servers as a pod
// starts it: it migrates its store, answers /readyz 200 and /metrics on its
// port, and on SIGTERM (what Kubernetes sends after the preStop sleep) drains
// and exits 0 well inside terminationGracePeriodSeconds.

const NATS_URL = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
const CLICKHOUSE_URL = process.env["TEST_CLICKHOUSE_URL"] ?? "http://127.0.0.1:8123";
/**
 * Kubernetes kills a pod 30 s (terminationGracePeriodSeconds) after it starts
 * stopping it, 5 s of which go to the preStop sleep. A keep-alive connection
 * left idle by a client, as the test's fetch and the gateway leave theirs,
 * is closed by serveRpc's 5 s timer today (its closeIdleConnections does not
 * see sockets handed to the HTTP/1.1 server), so the bound is 10 s, not 1.
 */
const SHUTDOWN_MS = 10_000;

const outdir = mkdtempSync(join(tmpdir(), "latchkey-bundles-int-"));
const reads = new Map<string, EnvReads>();
for (const c of components.filter((c) => existsSync(join(repoRoot, c.entry)))) {
  reads.set(c.name, envReads(repoRoot, (await bundle(c, outdir)).sources));
}
/** The components that need a store to start: the gateway's start is proven by the unit bundle test. */
const backed = components.filter((c) => {
  const required = reads.get(c.name)?.required;
  return required !== undefined && (required.has("DATABASE_URL") || required.has("CLICKHOUSE_URL"));
});

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  killBundles();
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  rmSync(outdir, { recursive: true, force: true });
});

/** Sends one statement to ClickHouse over HTTP and answers the result's text. */
async function clickhouse(query: string): Promise<string> {
  const base = new URL(CLICKHOUSE_URL);
  const auth = base.username ? `Basic ${btoa(`${base.username}:${base.password}`)}` : undefined;
  base.username = "";
  base.password = "";
  base.pathname = "/";
  const res = await fetch(base, {
    method: "POST",
    body: query,
    headers: auth ? { authorization: auth } : {},
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse answered ${res.status}: ${text}`);
  return text.trim();
}

/** A fresh ClickHouse database; analytics creates and migrates it at start, the test drops it. */
function testClickHouse(): { url: string; database: string } {
  const database = `latchkey_test_${randomBytes(6).toString("hex")}`;
  const url = new URL(CLICKHOUSE_URL);
  url.pathname = `/${database}`;
  cleanups.push(async () => void (await clickhouse(`DROP DATABASE IF EXISTS ${database}`)));
  return { url: url.toString(), database };
}

/** Deletes the durable consumer analytics made on the shared events stream (NATS client of the runtime). */
function dropConsumer(durable: string) {
  cleanups.push(async () => {
    const from = createRequire(join(repoRoot, "packages", "runtime", "package.json"));
    const load = (name: string) => import(pathToFileURL(from.resolve(name)).href);
    const { connect } = await load("@nats-io/transport-node");
    const { jetstreamManager } = await load("@nats-io/jetstream");
    const nc = await connect({ servers: NATS_URL });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.consumers.delete("LATCHKEY_EVENTS", durable).catch(() => {});
    } finally {
      await nc.close();
    }
  });
}

/** The environment a pod gives the component, pointed at the test's servers. */
async function environment(
  name: string,
  port: number,
): Promise<{ env: Record<string, string>; db?: TestDatabase; clickhouseDatabase?: string }> {
  const read = reads.get(name)!.read;
  const env: Record<string, string> = { PORT: String(port), LOG_LEVEL: "warn" };
  let db: TestDatabase | undefined;
  if (read.has("DATABASE_URL")) {
    db = await createTestDatabase();
    cleanups.push(() => db!.drop());
    env["DATABASE_URL"] = db.url;
  }
  if (read.has("NATS_URL")) env["NATS_URL"] = NATS_URL;
  let clickhouseDatabase: string | undefined;
  if (read.has("CLICKHOUSE_URL")) {
    const ch = testClickHouse();
    env["CLICKHOUSE_URL"] = ch.url;
    clickhouseDatabase = ch.database;
  }
  if (read.has("ANALYTICS_CONSUMER")) {
    env["ANALYTICS_CONSUMER"] = `deploy_test_${randomBytes(6).toString("hex")}`;
    env["ANALYTICS_START_AT"] = "new";
    dropConsumer(env["ANALYTICS_CONSUMER"]);
  }
  if (read.has("WEBHOOK_CONSUMER")) {
    env["WEBHOOK_CONSUMER"] = `deploy_test_${randomBytes(6).toString("hex")}`;
    dropConsumer(env["WEBHOOK_CONSUMER"]);
  }
  if (read.has("LATCHKEY_INTERNAL_SECRET"))
    env["LATCHKEY_INTERNAL_SECRET"] = randomBytes(32).toString("base64");
  if (read.has("LATCHKEY_ROOT_KEY")) env["LATCHKEY_ROOT_KEY"] = `lk_root_${randomBytes(24).toString("hex")}`;
  if (read.has("LATCHKEY_ENCRYPTION_KEY"))
    env["LATCHKEY_ENCRYPTION_KEY"] = randomBytes(32).toString("base64");
  // Called per request, not at start: nothing needs to listen there.
  for (const c of Object.values(CONTEXTS))
    if (read.has(c.urlSetting)) env[c.urlSetting] = "http://127.0.0.1:1";
  return { env, ...(db ? { db } : {}), ...(clickhouseDatabase ? { clickhouseDatabase } : {}) };
}

describe.each(backed.map((c) => [c.name, c] as const))("dist/%s.mjs against real servers", (name) => {
  it("migrates its store, answers /readyz 200 and /metrics, and exits 0 within 10 s of SIGTERM", async () => {
    const port = await freePort();
    const { env, db, clickhouseDatabase } = await environment(name, port);
    const { child, exited } = startBundle(outdir, name, env);

    const ready = await waitForOk(`http://127.0.0.1:${port}/readyz`, Date.now() + 20_000, exited);
    expect(ready.status).toBe(200);
    if (db) {
      const [row] = await db.sql<{ tables: number }[]>`
        SELECT count(*)::int AS tables FROM information_schema.tables WHERE table_schema = 'public'`;
      expect(row?.tables, "tables its migrations made").toBeGreaterThan(0);
    }
    if (clickhouseDatabase) {
      const tables = await clickhouse(
        `SELECT count() FROM system.tables WHERE database = '${clickhouseDatabase}'`,
      );
      expect(Number(tables), "ClickHouse tables its migrations made").toBeGreaterThan(0);
    }
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^# HELP process_/m);

    const sent = Date.now();
    child.kill("SIGTERM");
    const exit = await exited;
    const took = Date.now() - sent;
    expect({ code: exit.code, signal: exit.signal }, exit.stderr).toEqual({ code: 0, signal: null });
    expect(took).toBeLessThan(SHUTDOWN_MS);
  }, 40_000);
});

it("starts every component that needs a store here, so none is left unproven", () => {
  expect(backed.map((c) => c.name).sort()).toEqual([
    "analytics",
    "identity",
    "keys",
    "portal",
    "ratelimit",
    "webhooks",
  ]);
});
