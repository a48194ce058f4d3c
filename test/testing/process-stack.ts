import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join, resolve as resolvePath } from "node:path";
import { ensureRootKey } from "@latchkey/keys";
import { CONTEXTS, type ContextName, GATEWAY_PROCESS, InternalAuth, startOrder } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { freePort } from "@latchkey/runtime/testing/free-port";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { answerContract } from "../../gateway/testing/openapi-contract.ts";

const root = join(import.meta.dirname, "..", "..");

const contract = answerContract();

/**
 * Every answer an operation gives here, 2xx and 4xx, is held to docs/openapi.json: a field the
 * document does not promise, a promised one missing or a status it does not list fails the test.
 */
export function holdToContract(operation: string, status: number, body: unknown): void {
  const problems = contract(operation, status, body);
  if (problems !== undefined && problems.length > 0) {
    throw new Error(
      `${operation} answered ${status} outside docs/openapi.json: ${problems.join("; ")}\n${JSON.stringify(body)}`,
    );
  }
}

/**
 * The LATCHKEY_INTERNAL_SECRET every process started here shares (one per test run), and the
 * signer a test uses to call a service directly as the gateway would.
 */
export const internalSecret = randomBytes(32).toString("base64");
export const internalAuth = new InternalAuth([internalSecret]);

/** A free loopback port, for a child process to listen on. */
export { freePort };

export interface Proc {
  name: string;
  url: string;
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/**
 * Whether a /healthz answer says the process has started: alive, and no longer waiting for its
 * dependencies (packages/runtime/src/bootstrap.ts answers {"status":"starting"} until then).
 */
async function started(res: Response): Promise<boolean> {
  if (!res.ok) return false;
  const text = await res.text();
  try {
    return (JSON.parse(text) as { status?: unknown })?.status !== "starting";
  } catch {
    return true;
  }
}

/**
 * Starts one entrypoint (a path from this checkout's root, or an absolute one)
 * as its own node process (TypeScript through tsx's loader), with the run's
 * LATCHKEY_INTERNAL_SECRET unless `env` sets it, and waits until /healthz
 * says it has started (`until: "alive"`: until /healthz answers at all, for a
 * process a test starts before its dependencies). `port` when the caller must know it
 * beforehand (replicas told each other's URLs); `nodeArgs` are flags for node
 * itself, e.g. --cpu-prof, which NODE_OPTIONS refuses.
 */
export async function startProcess(
  name: string,
  entry: string,
  env: Record<string, string>,
  port?: number,
  nodeArgs: string[] = [],
  until: "started" | "alive" = "started",
): Promise<Proc> {
  port ??= await freePort();
  let output = "";
  const child = spawn(process.execPath, ["--import", "tsx", ...nodeArgs, resolvePath(root, entry)], {
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      LATCHKEY_INTERNAL_SECRET: internalSecret,
      ...env,
      PORT: String(port),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => {
    output += d;
  });
  child.stderr!.on("data", (d) => {
    output += d;
  });
  const url = `http://127.0.0.1:${port}`;
  // E2E_READY_TIMEOUT_MS: longer on a machine too loaded to boot PGlite in 30 s.
  const deadline = Date.now() + Number(process.env["E2E_READY_TIMEOUT_MS"] || 30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => (until === "alive" ? r.ok : started(r)),
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`${name} did not become healthy:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name,
    url,
    child,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
      }),
  };
}

export interface Stack {
  db: TestDatabase;
  gateway: Proc;
  keys: Proc[];
  ratelimit: Proc;
  identity: Proc;
  analytics: Proc | undefined;
  webhooks: Proc | undefined;
  portal: Proc | undefined;
  rootKey: string;
  /** POST /v2/<operation> with the bootstrap root key (or `rootKey`), answering status and parsed body. */
  call(operation: string, body: unknown, rootKey?: string | null): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

/**
 * The services and the gateway as separate processes on a fresh database, the
 * way they run in Kubernetes, driven over HTTP: every context of contexts.ts
 * (analytics and webhooks when asked for), each after the ones it calls and
 * given their URLs, then the gateway, given every one's.
 */
export async function startStack(
  options: {
    keysInstances?: number;
    natsUrl?: string;
    /** Runs the analytics service too (needs natsUrl): its ClickHouse URL, database in the path. */
    analytics?: { clickhouseUrl: string; consumer: string };
    /**
     * Runs the webhooks service too. With `consumer` (and natsUrl) it takes events.domain from
     * JetStream under that durable name; without, it serves the RPCs and delivers only redeliveries.
     */
    webhooks?: { consumer?: string };
    /** Runs the portal service too (its getVerifications needs `analytics`). */
    portal?: boolean;
    /** Extra env per process. */
    env?: Partial<Record<ContextName | "gateway", Record<string, string>>>;
    /** Node flags for every service and the gateway, e.g. --cpu-prof for profiles. */
    nodeArgs?: string[];
    /** Another checkout (with its dependencies installed) whose services run instead of this one's: bench:ab compares code this way. */
    checkout?: string;
  } = {},
): Promise<Stack> {
  const at = (entry: string) => join(options.checkout ?? root, entry);
  const db = await createTestDatabase();
  const common: Record<string, string> = {
    DATABASE_URL: db.url,
    ...(options.natsUrl ? { NATS_URL: options.natsUrl } : {}),
  };
  /** What each context's process is given beyond `common` and its callees' URLs; undefined: not started. */
  const own: Record<ContextName, Record<string, string> | undefined> = {
    keys: {},
    ratelimit: {},
    identity: {},
    analytics: options.analytics && {
      CLICKHOUSE_URL: options.analytics.clickhouseUrl,
      ANALYTICS_CONSUMER: options.analytics.consumer,
      ANALYTICS_START_AT: "new",
    },
    webhooks: options.webhooks && {
      LATCHKEY_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      ...(options.webhooks.consumer && options.natsUrl
        ? { WEBHOOK_CONSUMER: options.webhooks.consumer }
        : { NATS_URL: "" }),
    },
    portal: options.portal ? {} : undefined,
  };
  const flags = options.nodeArgs;
  const procs = new Map<ContextName, Proc[]>();
  const urlsOf = (names: readonly ContextName[]) =>
    Object.fromEntries(
      names
        .filter((n) => procs.has(n))
        .map((n) => [
          CONTEXTS[n].urlSetting,
          procs
            .get(n)!
            .map((p) => p.url)
            .join(","),
        ]),
    );
  for (const name of startOrder()) {
    const extra = own[name];
    if (extra === undefined) continue;
    const instances = name === "keys" ? (options.keysInstances ?? 1) : 1;
    const list: Proc[] = [];
    // One at a time: each runs the migrations at start, under an advisory lock.
    for (let i = 0; i < instances; i++) {
      const env = { ...common, ...urlsOf(CONTEXTS[name].calls), ...extra, ...options.env?.[name] };
      list.push(
        await startProcess(
          name === "keys" ? `keys-${i}` : name,
          at(CONTEXTS[name].entry),
          env,
          undefined,
          flags,
        ),
      );
    }
    procs.set(name, list);
  }
  const gateway = await startProcess(
    "gateway",
    at(GATEWAY_PROCESS.entry),
    { ...common, ...urlsOf([...procs.keys()]), ...options.env?.gateway },
    undefined,
    flags,
  );
  const rootKey = `lk_root_e2e_${Math.random().toString(36).slice(2)}`;
  await ensureRootKey(db.sql, rootKey);
  const one = (name: ContextName) => procs.get(name)?.[0];

  return {
    db,
    gateway,
    keys: procs.get("keys")!,
    ratelimit: one("ratelimit")!,
    identity: one("identity")!,
    analytics: one("analytics"),
    webhooks: one("webhooks"),
    portal: one("portal"),
    rootKey,
    async call(operation, body, key = rootKey) {
      const res = await fetch(`${gateway.url}/v2/${operation}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
        },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
      holdToContract(operation, res.status, parsed);
      return { status: res.status, body: parsed };
    },
    async stop() {
      await Promise.all([gateway.stop(), ...[...procs.values()].flat().map((p) => p.stop())]);
      await db.drop();
    },
  };
}

/**
 * What a stack with the analytics service needs: NATS, and a ClickHouse database and JetStream
 * consumer of its own, named after `name` and a random suffix; `drop` removes both once the stack
 * has stopped.
 */
export function analyticsOptions(name: string) {
  const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
  const clickhouse = process.env["TEST_CLICKHOUSE_URL"] ?? "http://127.0.0.1:8123";
  const suffix = randomBytes(4).toString("hex");
  const consumer = `${name}_${suffix}`;
  const database = `latchkey_${name}_${suffix}`;
  return {
    suffix,
    options: { natsUrl, analytics: { clickhouseUrl: `${clickhouse}/${database}`, consumer } },
    async drop() {
      const nc = await connect({ servers: natsUrl });
      await (await jetstreamManager(nc)).consumers.delete("LATCHKEY_EVENTS", consumer).catch(() => {});
      await nc.close();
      await fetch(`${clickhouse}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS ${database}`)}`, {
        method: "POST",
      });
    },
  };
}
