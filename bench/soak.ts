import { type ChildProcess, execFile, fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createRootKey } from "@latchkey/keys";
import { connect, type Sql } from "@latchkey/runtime";
import { createTestDatabase, testServerUrl } from "@latchkey/runtime/testing/database";
import { freePort } from "@latchkey/runtime/testing/free-port";
import { Redis } from "ioredis";
import { type Proc, startProcess, startStack } from "../test/testing/process-stack.ts";
import { cpuMicros, descendants, pidsMatching, serviceRssMiB } from "./procfs.ts";
import type { AttackerConfig, AttackerReport } from "./soak-attacker.ts";
import { percentile } from "./soak-client.ts";
import {
  BOUNDS,
  type Dependency,
  type FaultWindow,
  judgeEvents,
  judgeStatuses,
  latencies,
  memoryAt,
  type OpFigures,
  perOperation,
  type Verdict,
} from "./soak-judge.ts";
import { type OwnServer, soakClickHouse, soakNats, soakRedis } from "./soak-servers.ts";
import type { VictimConfig, VictimReport } from "./soak-victim.ts";

/**
 * `npm run soak`: Latchkey on real services, two workspaces, SOAK_MINUTES minutes (10). A victim
 * runs a steady mix the whole time (bench/soak-victim.ts); after a warm-up alone an attacker does
 * the worst each of its limits allows (bench/soak-attacker.ts) while NATS, Redis and ClickHouse
 * are killed and restarted and PostgreSQL's connections killed, on a schedule. It prints
 * per-workspace figures and each bound with its verdict, and exits 1 when a bound fails. Not a
 * test and not part of `npm test`: a run takes minutes and loads the machine. What it runs, each
 * bound and why, and how to read it: docs/reliability.md.
 */

const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`${name} must be a number of at least 0, got '${raw}'`);
  return value;
};

const MINUTES = num("SOAK_MINUTES", 10);
if (MINUTES < 1)
  throw new Error(`SOAK_MINUTES must be at least 1 (a warm-up and an attack), got '${MINUTES}'`);
const TOPOLOGY = process.env["SOAK_TOPOLOGY"] || "start";
if (TOPOLOGY !== "start" && TOPOLOGY !== "processes")
  throw new Error(`SOAK_TOPOLOGY must be start or processes, got '${TOPOLOGY}'`);
/** RATELIMIT_MAX_COUNTERS_PER_WORKSPACE when set; by default Latchkey's own (250,000). */
const COUNTER_BUDGET = process.env["SOAK_COUNTER_BUDGET"] || undefined;
/** Redis's maxmemory: a Redis scaled to the soak (the Redis overlay's Valkey has 768 MB). */
const REDIS_MAXMEMORY = process.env["SOAK_REDIS_MAXMEMORY"] || "256mb";
const FAULT_DOWN_S = num("SOAK_FAULT_DOWN_S", 5);
const FAULT_GRACE_S = num("SOAK_FAULT_GRACE_S", 5);
const FAULTS = process.env["SOAK_FAULTS"] ?? "redis,nats,clickhouse,postgres";
// Checked before anything starts: a mistyped name stops the soak at once.
const FAULT_DEPENDENCIES = FAULTS.split(",")
  .map((d) => d.trim())
  .filter(Boolean) as Dependency[];
for (const d of FAULT_DEPENDENCIES) {
  if (!["nats", "redis", "clickhouse", "postgres"].includes(d)) {
    process.stderr.write(`SOAK_FAULTS: unknown '${d}'; use nats, redis, clickhouse, postgres (or nothing)\n`);
    process.exit(2);
  }
}
/** Seconds between faults; a short run packs them closer, so that each dependency fails at least once. */
const FAULT_EVERY_S = num("SOAK_FAULT_EVERY_S", 60);
const DRAIN_S = num("SOAK_DRAIN_S", 60);
/**
 * Verifications fail closed while Redis is down only where the keys service is told so
 * (RATELIMIT_FAIL_OPEN=false, read by the separate keys process; `npm start` always fails open).
 */
const FAIL_CLOSED = TOPOLOGY === "processes" && process.env["RATELIMIT_FAIL_OPEN"] === "false";
/** Latchkey's own delivery timeout (WEBHOOK_TIMEOUT_MS), which the attacker's slow receivers answer just under. */
const WEBHOOK_TIMEOUT_MS = 10_000;

const victimRates = {
  verifyRate: num("VICTIM_VERIFY_RATE", 50),
  limitRate: num("VICTIM_LIMIT_RATE", 20),
  manageRate: num("VICTIM_MANAGE_RATE", 2),
  analyticsEveryS: num("VICTIM_ANALYTICS_EVERY_S", 5),
  keys: Math.max(1, num("VICTIM_KEYS", 20)),
  rotateEveryS: num("VICTIM_ROTATE_S", 30),
};
const attackRates = {
  counterRate: num("ATTACK_COUNTER_RATE", 2_000),
  eventRate: num("ATTACK_EVENT_RATE", 5),
  manageRate: num("ATTACK_MANAGE_RATE", 1),
  fatVerifyRate: num("ATTACK_FAT_VERIFY_RATE", 20),
  queryConcurrency: num("ATTACK_QUERY_CONCURRENCY", 4),
  rootFloodRate: num("ATTACK_ROOT_FLOOD_RATE", 1_000),
  keyFloodRate: num("ATTACK_KEY_FLOOD_RATE", 200),
  reenableEveryS: num("ATTACK_REENABLE_S", 30),
};

// The timeline, from the start of the victim's load: warm-up alone, then the attack. Memory is
// measured from the end of the attack's ramp (its first 40 %), when whatever bounds the attacker's
// share should hold it, to the attack's end.
const TOTAL_S = MINUTES * 60;
const WARMUP_S = Math.max(20, 0.15 * TOTAL_S);
const ATTACK_S = TOTAL_S - WARMUP_S;
const RAMP_S = Math.max(30, 0.4 * ATTACK_S);
const SAMPLE_EVERY_S = 5;
/** Memory at a point is the mean of this many seconds of samples before it (Redis's outside its fault windows). */
const MEMORY_SPAN_S = 15;

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const outDir = join(root, ".bench", "soak", stamp);
let t0 = Date.now();
const at = (t = Date.now()) => `${((t - t0) / 1000).toFixed(1).padStart(6)} s`;
const say = (line: string) => process.stderr.write(`[${at()}] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * CPU time by group of processes, per phase, summed pid by pid from one sample to the next: a server
 * restarted by a fault keeps what its earlier process used, and its new one counts from its start.
 */
class CpuTracker {
  private last = new Map<number, number>();
  readonly used: Record<string, Record<"warmup" | "attack", number>> = {};

  constructor(private readonly groups: Record<string, () => number[]>) {
    for (const name of Object.keys(groups)) this.used[name] = { warmup: 0, attack: 0 };
    this.sample(undefined);
  }

  sample(phase: "warmup" | "attack" | undefined): void {
    const next = new Map<number, number>();
    for (const [name, pids] of Object.entries(this.groups)) {
      for (const pid of pids().flatMap((p) => [p, ...descendants(p)])) {
        const now = cpuMicros(pid);
        if (phase) this.used[name]![phase] += Math.max(0, now - (this.last.get(pid) ?? 0));
        next.set(pid, now);
      }
    }
    this.last = next;
  }
}

/**
 * The client address each side's requests carry in X-Forwarded-For, as a load balancer in front of
 * Latchkey reports them (TRUSTED_PROXIES names the loopback the soak connects from): the victim and
 * the attacker are different clients, as they are in a deployment, so each has its own root-key
 * lookup budget (docs/reliability.md).
 */
const CLIENT_ADDRESSES = { victim: "198.51.100.7", attacker: "203.0.113.9" } as const;
const TRUSTED_PROXIES = "127.0.0.1,::1";

/** A worker process (victim or attacker) and its messages. */
function worker(file: string, config: object, clientAddress: string) {
  const child = fork(join(import.meta.dirname, file), [], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, SOAK_WORKER: JSON.stringify(config), SOAK_CLIENT_ADDRESS: clientAddress },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const waiting = new Map<string, (m: any) => void>();
  const arrived = new Map<string, any>();
  child.on("message", (m: any) => {
    arrived.set(m.type, m);
    waiting.get(m.type)?.(m);
  });
  let exited: string | undefined;
  child.on("exit", (code, signal) => {
    exited = `${file} exited (${code ?? signal})`;
    for (const reject of waiting.values()) reject({ type: "exit" });
  });
  return {
    child,
    send: (type: string, extra: object = {}) => {
      if (child.connected) child.send({ type, ...extra });
    },
    next: (type: string, timeoutMs: number) =>
      new Promise<any>((resolve, reject) => {
        if (arrived.has(type)) return resolve(arrived.get(type));
        if (exited) return reject(new Error(exited));
        const timer = setTimeout(
          () => reject(new Error(`${file}: no '${type}' within ${timeoutMs / 1000} s`)),
          timeoutMs,
        );
        waiting.set(type, (m) => {
          clearTimeout(timer);
          if (m.type === "exit") reject(new Error(exited));
          else resolve(m);
        });
      }),
  };
}

/** `npm run latchkey -- workspace create <name>`: the workspace's id and its root key (the CLI's last line). */
async function cliWorkspace(databaseUrl: string, dataDir: string, name: string) {
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", join(root, "apps/latchkey/src/cli.ts"), "workspace", "create", name],
    { env: { ...process.env, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, NATS_URL: "" }, cwd: root },
  );
  const lines = stdout.trim().split("\n");
  const workspaceId = /workspace (\S+)/.exec(lines[0] ?? "")?.[1];
  if (!workspaceId) throw new Error(`the CLI did not create workspace ${name}: ${stdout}`);
  return { workspaceId, rootKey: lines.at(-1)!.trim() };
}

interface Latchkey {
  url: string;
  /** Its processes that exited before the soak stopped them, and when. */
  exits: { name: string; code: number | null; signal: string | null; at: number }[];
  pids(): number[];
  metricsUrls: string[];
  output(): string;
  databaseUrl: string;
  stop(): Promise<void>;
  dropDatabase(): Promise<void>;
}

async function startLatchkey(
  servers: { nats: OwnServer; redis: OwnServer; clickhouse: OwnServer & { queryUrl: string } },
  dataDir: string,
): Promise<Latchkey> {
  const metricsPort = await freePort();
  const ratelimitEnv = {
    RATELIMIT_STORE: "redis",
    REDIS_URL: servers.redis.url,
    ...(COUNTER_BUDGET ? { RATELIMIT_MAX_COUNTERS_PER_WORKSPACE: COUNTER_BUDGET } : {}),
  };
  const clickhouseUrl = `${servers.clickhouse.url}/latchkey`;
  if (TOPOLOGY === "start") {
    const db = await createTestDatabase();
    const proc = await startProcess("latchkey", "apps/latchkey/src/start.ts", {
      DATABASE_URL: db.url,
      NATS_URL: servers.nats.url,
      CLICKHOUSE_URL: clickhouseUrl,
      CLICKHOUSE_QUERY_URL: servers.clickhouse.queryUrl,
      ...ratelimitEnv,
      DATA_DIR: dataDir,
      LATCHKEY_ROOT_KEY: `lk_root_soak_${randomBytes(12).toString("hex")}`,
      METRICS_PORT: String(metricsPort),
      CONSOLE: "false",
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      TRUSTED_PROXIES,
      LOG_LEVEL: "warn",
    });
    return {
      url: proc.url,
      exits: watchExits([proc]),
      pids: () => (proc.child.pid === undefined ? [] : [proc.child.pid]),
      metricsUrls: [`http://127.0.0.1:${metricsPort}/metrics`],
      output: proc.output,
      databaseUrl: db.url,
      stop: proc.stop,
      dropDatabase: db.drop,
    };
  }
  const stack = await startStack({
    natsUrl: servers.nats.url,
    analytics: { clickhouseUrl, consumer: "analytics" },
    webhooks: { consumer: "webhooks" },
    env: {
      ratelimit: ratelimitEnv,
      analytics: { CLICKHOUSE_QUERY_URL: servers.clickhouse.queryUrl },
      webhooks: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS) },
      gateway: { METRICS_PORT: String(metricsPort), TRUSTED_PROXIES },
    },
  });
  const procs: Proc[] = [
    stack.gateway,
    ...stack.keys,
    stack.ratelimit,
    stack.identity,
    ...(stack.analytics ? [stack.analytics] : []),
    ...(stack.webhooks ? [stack.webhooks] : []),
  ];
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // The stack's stop also drops its database.
    await stack.stop();
  };
  return {
    url: stack.gateway.url,
    exits: watchExits(procs),
    pids: () => procs.flatMap((p) => (p.child.pid === undefined ? [] : [p.child.pid])),
    metricsUrls: [
      `http://127.0.0.1:${metricsPort}/metrics`,
      ...procs.filter((p) => p !== stack.gateway).map((p) => `${p.url}/metrics`),
    ],
    output: () => procs.map((p) => `--- ${p.name}\n${p.output()}`).join("\n"),
    databaseUrl: stack.db.url,
    stop,
    dropDatabase: stop,
  };
}

/** Until `stopping` is set, every exit of these processes: a crash, which the soak reports. */
let stopping = false;
function watchExits(procs: Proc[]): Latchkey["exits"] {
  const exits: Latchkey["exits"] = [];
  for (const p of procs) {
    p.child.once("exit", (code, signal) => {
      if (!stopping) exits.push({ name: p.name, code, signal, at: Date.now() });
    });
  }
  return exits;
}

/**
 * The value of every `latchkey_loop_last_progress_seconds{loop=...}` line, by loop, and the longest
 * event-loop delay any process saw since the last scrape (`nodejs_eventloop_lag_max_seconds`, which
 * each scrape resets), in ms.
 */
async function loopProgress(urls: string[]): Promise<{ loops: Map<string, number>; lagMaxMs: number }> {
  const found = new Map<string, number>();
  let lagMaxMs = 0;
  for (const url of urls) {
    const text = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => (r.ok ? r.text() : ""),
      () => "",
    );
    for (const m of text.matchAll(/^latchkey_loop_last_progress_seconds\{loop="([^"]+)"\} (\S+)$/gm)) {
      found.set(m[1]!, Math.max(found.get(m[1]!) ?? 0, Number(m[2])));
    }
    const lag = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
    if (lag) lagMaxMs = Math.max(lagMaxMs, Number(lag[1]) * 1000);
  }
  return { loops: found, lagMaxMs };
}

/** What Redis says of its memory and of the commands it refused, at the end. */
async function redisFacts(client: Redis): Promise<string[]> {
  const info = await client.info().catch(() => "");
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, "m").exec(info)?.[1]?.trim();
  const lines = [
    `used_memory ${field("used_memory_human")}, maxmemory ${field("maxmemory_human")} (${field("maxmemory_policy")}), keys: ${field("db0") ?? "none"}`,
  ];
  for (const m of info.matchAll(/^errorstat_(\w+):count=(\d+)/gm)) lines.push(`errors ${m[1]}: ${m[2]}`);
  return lines;
}

/** Counters worth reading at the end: events dropped, refusals, store failures. */
async function notableMetrics(urls: string[]): Promise<string[]> {
  const lines: string[] = [];
  for (const url of urls) {
    const text = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => (r.ok ? r.text() : ""),
      () => "",
    );
    for (const m of text.matchAll(
      /^(latchkey_\w*(dropped|refusals|failures|stale)\w*(\{[^}]*\})?) (\S+)$/gm,
    )) {
      if (Number(m[4]) !== 0) lines.push(`${m[1]} ${m[4]}`);
    }
  }
  return lines;
}

/** What the soak started, stopped at the end, on an error, or on SIGINT/SIGTERM: nothing is left running. */
const cleanups: (() => Promise<unknown>)[] = [];
const children: ChildProcess[] = [];
const tmp = mkdtempSync(join(tmpdir(), "latchkey-soak-"));
let cleaned: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaned ??= (async () => {
    stopping = true;
    // The workers' own children (the attacker's floods) first, while their parent is still there to find them by.
    for (const child of children) {
      if (child.pid === undefined) continue;
      for (const pid of [...descendants(child.pid), child.pid].reverse()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
    }
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => say(`cleanup: ${err}`));
    rmSync(tmp, { recursive: true, force: true });
  })();
  return cleaned;
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping everything the soak started`);
    cleanUp().finally(() => process.exit(130));
  });
}

async function main(): Promise<number> {
  const loadAtStart = loadavg();
  mkdirSync(outDir, { recursive: true });
  try {
    say(
      `soak: ${MINUTES} min, topology ${TOPOLOGY === "start" ? "npm start (one process)" : "separate processes"}; starting NATS, Redis and ClickHouse of its own under ${tmp}`,
    );
    const nats = await soakNats();
    cleanups.push(() => nats.close());
    const redis = await soakRedis(tmp, REDIS_MAXMEMORY);
    cleanups.push(() => redis.stop());
    const clickhouse = await soakClickHouse(tmp, "latchkey");
    cleanups.push(() => clickhouse.stop());
    const latchkey = await startLatchkey({ nats, redis, clickhouse }, join(tmp, "data"));
    cleanups.push(() => latchkey.dropDatabase());
    cleanups.push(() => latchkey.stop());
    say(`Latchkey is up at ${latchkey.url} (database ${new URL(latchkey.databaseUrl).pathname.slice(1)})`);

    const victimWs = await cliWorkspace(latchkey.databaseUrl, join(tmp, "data"), "soak-victim");
    const attackerWs = await cliWorkspace(latchkey.databaseUrl, join(tmp, "data"), "soak-attacker");
    // Root keys the victim turns to as it rotates, made as the CLI's root-key create makes them.
    const admin: Sql = connect(latchkey.databaseUrl, { max: 1 });
    const rotated: string[] = [];
    for (let i = 0; i <= TOTAL_S / Math.max(1, victimRates.rotateEveryS) + 1; i++) {
      rotated.push(
        (await createRootKey(admin, { workspace: victimWs.workspaceId, permissions: ["*"] })).rootKey,
      );
    }
    await admin.end({ timeout: 5 });
    say(`workspaces: victim ${victimWs.workspaceId}, attacker ${attackerWs.workspaceId}`);

    const victimConfig: VictimConfig = {
      url: latchkey.url,
      rootKey: victimWs.rootKey,
      rotatedRootKeys: rotated,
      drainS: DRAIN_S,
      ...victimRates,
    };
    const attackerConfig: AttackerConfig = {
      url: latchkey.url,
      rootKey: attackerWs.rootKey,
      webhookTimeoutMs: WEBHOOK_TIMEOUT_MS,
      ...attackRates,
    };
    const attacker = worker("soak-attacker.ts", attackerConfig, CLIENT_ADDRESSES.attacker);
    children.push(attacker.child);
    const attackerReady = await attacker.next("ready", 120_000);
    say(
      `attacker ready: ${attackerReady.webhooks.slow} slow and ${attackerReady.webhooks.failing} failing webhooks`,
    );
    const victim = worker("soak-victim.ts", victimConfig, CLIENT_ADDRESSES.victim);
    children.push(victim.child);
    await victim.next("ready", 120_000);
    const databaseName = new URL(latchkey.databaseUrl).pathname.slice(1);
    const cpu = new CpuTracker({
      latchkey: latchkey.pids,
      postgres: () => pidsMatching(databaseName),
      nats: nats.pids,
      redis: redis.pids,
      clickhouse: clickhouse.pids,
      "soak: victim": () => (victim.child.pid === undefined ? [] : [victim.child.pid]),
      "soak: attacker and floods": () => (attacker.child.pid === undefined ? [] : [attacker.child.pid]),
    });
    t0 = Date.now();
    const attackAt = t0 + WARMUP_S * 1000;
    const baselineAt = attackAt + RAMP_S * 1000;
    const endAt = t0 + TOTAL_S * 1000;
    say(
      `victim running; attack at ${at(attackAt)}, memory baseline at ${at(baselineAt)}, end at ${at(endAt)}`,
    );

    // Samples every few seconds: memory, and how long each background loop has gone without progress.
    const redisClient = new Redis(redis.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 500,
    });
    redisClient.on("error", () => {});
    await redisClient.connect().catch(() => {});
    const rss: { t: number; value: number }[] = [];
    const redisUsed: { t: number; value: number }[] = [];
    const loopStale = new Map<string, { max: number; at: number }>();
    /** The longest event-loop delay of each sample interval, by phase, in ms. */
    const lag = { warmup: [] as number[], attack: [] as number[] };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const t = Date.now();
        cpu.sample(t <= attackAt ? "warmup" : t <= endAt ? "attack" : undefined);
        rss.push({ t, value: latchkey.pids().reduce((sum, pid) => sum + serviceRssMiB(pid), 0) });
        const info = await redisClient.info("memory").catch(() => "");
        const used = /used_memory:(\d+)/.exec(info);
        if (used) redisUsed.push({ t, value: Number(used[1]) / 2 ** 20 });
        const scraped = await loopProgress(latchkey.metricsUrls);
        const phase = t <= attackAt ? "warmup" : t <= endAt ? "attack" : undefined;
        if (phase) lag[phase].push(scraped.lagMaxMs);
        for (const [loop, last] of scraped.loops) {
          const stale = t / 1000 - last;
          const seen = loopStale.get(loop);
          if (!seen || stale > seen.max) loopStale.set(loop, { max: stale, at: t });
        }
        await sleep(SAMPLE_EVERY_S * 1000);
      }
    })();

    // Progress, for whoever watches: every 30 s.
    const progress = setInterval(() => {
      const r = rss.at(-1)?.value ?? Number.NaN;
      const m = redisUsed.at(-1)?.value ?? Number.NaN;
      say(`RSS ${r.toFixed(0)} MiB, Redis ${m.toFixed(1)} MiB`);
    }, 30_000);

    // Once Latchkey has exited every request fails: the run stops early rather than waiting out its time.
    let crashNoted = false;
    const untilOrCrash = async (t: number) => {
      while (Date.now() < t && latchkey.exits.length === 0) await sleep(Math.min(1_000, t - Date.now()));
      if (latchkey.exits.length > 0 && !crashNoted) {
        crashNoted = true;
        say(`Latchkey exited (${latchkey.exits.map((e) => e.name).join(", ")}): the run stops early`);
      }
    };
    await untilOrCrash(attackAt);
    cpu.sample("warmup");
    say("attack starts");
    attacker.send("attack");

    // Faults: one dependency at a time, spread over the attack, none starting in its last 30 s.
    const windows: FaultWindow[] = [];
    const deps = FAULT_DEPENDENCIES;
    // On the server's maintenance database, so that it is not among the connections it kills.
    const killer = connect(testServerUrl(), { max: 1 });
    const faultSpan = ATTACK_S - 25;
    const every = deps.length === 0 ? 0 : Math.min(FAULT_EVERY_S, faultSpan / deps.length);
    const own: Record<Exclude<Dependency, "postgres">, OwnServer> = { nats, redis, clickhouse };
    for (let i = 0; deps.length > 0; i++) {
      const startAt = attackAt + (10 + i * every) * 1000;
      if (startAt > endAt - 15_000 - FAULT_DOWN_S * 1000 - 10_000) break;
      await untilOrCrash(startAt);
      if (crashNoted) break;
      const dependency = deps[i % deps.length]!;
      const start = Date.now();
      if (dependency === "postgres") {
        const rows = await killer<{ killed: boolean }[]>`
          SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
          WHERE datname = ${databaseName} AND pid <> pg_backend_pid()`;
        const killed = rows.filter((r) => r.killed).length;
        const note = `postgres: ${killed} connections to ${databaseName} killed (pg_terminate_backend)`;
        windows.push({
          dependency,
          start,
          end: Date.now() + FAULT_GRACE_S * 1000,
          note: `${at(start)} ${note}`,
        });
        say(`fault: ${note}`);
        continue;
      }
      await own[dependency].stop();
      say(`fault: ${dependency} killed (SIGKILL)`);
      await sleep(FAULT_DOWN_S * 1000);
      await own[dependency].start();
      const back = Date.now();
      say(`fault: ${dependency} back after ${((back - start) / 1000).toFixed(1)} s`);
      windows.push({
        dependency,
        start,
        end: back + FAULT_GRACE_S * 1000,
        note: `${at(start)} ${dependency} killed, back at ${at(back)} (${((back - start) / 1000).toFixed(1)} s down)`,
      });
    }
    await killer.end({ timeout: 5 });

    await untilOrCrash(endAt);
    cpu.sample("attack");
    const attackSeconds = (Date.now() - attackAt) / 1000;
    say("load stops; the victim's last events drain");
    clearInterval(progress);
    attacker.send("stop");
    victim.send("stop");
    sampling = false;
    await sampler;
    const metricsAtEnd = await notableMetrics(latchkey.metricsUrls);
    const crashed = latchkey.exits.length > 0;
    victim.send("report", crashed ? { drainS: 0 } : {});
    const { report: victimReport } = (await victim.next("report", (DRAIN_S + 120) * 1000)) as {
      report: VictimReport;
    };
    attacker.send("report");
    const { report: attackerReport } = (await attacker.next("report", 120_000)) as { report: AttackerReport };

    // Analytics must count every verification the victim had answered, exactly, by outcome.
    const expectedCounts = victimReport.verified;
    let counted: Record<string, number> | undefined;
    const analyticsDeadline = Date.now() + DRAIN_S * 1000;
    while (!crashed) {
      const res = await fetch(`${latchkey.url}/v2/analytics.getVerifications`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${victimWs.rootKey}` },
        body: JSON.stringify({
          query: "SELECT outcome, count() AS n FROM key_verifications_v1 GROUP BY outcome",
        }),
      }).catch(() => undefined);
      if (res?.ok) {
        const rows = ((await res.json()) as any).data as { outcome: string; n: number }[];
        counted = Object.fromEntries(rows.map((r) => [r.outcome, Number(r.n)]));
      }
      const same =
        counted !== undefined &&
        Object.keys({ ...counted, ...expectedCounts }).every(
          (o) => (counted![o] ?? 0) === (expectedCounts[o] ?? 0),
        );
      if (same || Date.now() > analyticsDeadline) break;
      await sleep(2_000);
    }

    stopping = true;
    const output = report({
      exits: latchkey.exits,
      output: latchkey.output(),
      load: [loadAtStart, loadavg()],
      victim: victimReport,
      attacker: attackerReport,
      windows,
      rss,
      redisUsed,
      loopStale,
      lag,
      counted,
      metricsAtEnd,
      cpu: cpu.used,
      attackSeconds,
      redisInfo: await redisFacts(redisClient),
      attackAt,
      baselineAt,
      endAt,
    });
    process.stdout.write(output.text);
    writeFileSync(join(outDir, "report.txt"), output.text);
    writeFileSync(join(outDir, "latchkey.log"), latchkey.output());
    writeFileSync(
      join(outDir, "samples.json"),
      JSON.stringify({ windows, rss, redisUsed, victim: victimReport, attacker: { ...attackerReport } }),
    );
    say(`report, Latchkey's log and every sample: ${outDir}`);
    redisClient.disconnect();
    victim.send("exit");
    attacker.send("exit");
    return output.failed ? 1 : 0;
  } finally {
    await cleanUp();
  }
}

/**
 * What Latchkey logged of the requests with these ids (the gateway logs a failed request with its
 * id and the error behind the answer), one line each: the cause the answer's generic text hides.
 */
function causes(output: string, ids: string[]): string[] {
  const found: string[] = [];
  for (const id of ids) {
    const line = output.split("\n").find((l) => l.includes(`"requestId":"${id}"`));
    if (line === undefined) continue;
    try {
      const record = JSON.parse(line);
      const err = record.err;
      const text =
        typeof err === "object" && err !== null ? (err.message ?? JSON.stringify(err)) : String(err);
      found.push(`  ${id}: ${record.service ?? ""} ${record.msg ?? ""}: ${text}`.slice(0, 400));
    } catch {}
  }
  return found;
}

const ms = (v: number) =>
  Number.isFinite(v) ? `${v.toFixed(1)} ms` : v === Number.POSITIVE_INFINITY ? "never" : "-";
const pct = (v: number) => `${v >= 0 ? "+" : ""}${(v * 100).toFixed(1)} %`;

function opTable(title: string, figures: OpFigures[]): string[] {
  return [
    `| ${title.padEnd(34)} | requests | statuses                                  | p50 ms  | p99 ms   | max ms   |`,
    `|${"-".repeat(36)}|----------|-------------------------------------------|---------|----------|----------|`,
    ...figures.map(
      (f) =>
        `| ${f.op.padEnd(34)} | ${String(f.count).padStart(8)} | ${Object.entries(f.statuses)
          .map(([s, n]) => `${s === "0" ? "none" : s}: ${n}`)
          .join(", ")
          .padEnd(41)} | ${f.p50.toFixed(1).padStart(7)} | ${f.p99.toFixed(1).padStart(8)} | ${f.max
          .toFixed(0)
          .padStart(8)} |`,
    ),
  ];
}

function report(r: {
  exits: Latchkey["exits"];
  output: string;
  load: number[][];
  victim: VictimReport;
  attacker: AttackerReport;
  windows: FaultWindow[];
  rss: { t: number; value: number }[];
  redisUsed: { t: number; value: number }[];
  loopStale: Map<string, { max: number; at: number }>;
  lag: { warmup: number[]; attack: number[] };
  counted: Record<string, number> | undefined;
  metricsAtEnd: string[];
  cpu: Record<string, Record<"warmup" | "attack", number>>;
  /** How long the attack ran: less than planned when Latchkey exited. */
  attackSeconds: number;
  redisInfo: string[];
  attackAt: number;
  baselineAt: number;
  endAt: number;
}): { text: string; failed: boolean } {
  const { victim, attacker, windows } = r;
  const verdicts: Verdict[] = [];
  const lines: string[] = [""];
  lines.push(
    `# npm run soak: ${MINUTES} min, ${TOPOLOGY === "start" ? "npm start" : "separate processes"}; warm-up ${WARMUP_S.toFixed(0)} s alone, attack ${ATTACK_S.toFixed(0)} s (ramp ${RAMP_S.toFixed(0)} s)`,
    "",
    `load average (1, 5, 15 min) at the start ${r.load[0]!.map((l) => l.toFixed(1)).join(", ")}, at the end ${r.load[1]!.map((l) => l.toFixed(1)).join(", ")}`,
    `victim: ${JSON.stringify(victimRates)}`,
    `attacker: ${JSON.stringify(attackRates)}; counters per workspace ${COUNTER_BUDGET ?? "Latchkey's default"}, Redis maxmemory ${REDIS_MAXMEMORY}`,
    "",
    "## Faults",
    "",
    ...(windows.length === 0 ? ["none"] : windows.map((w) => `- ${w.note}`)),
    "",
    "## Victim",
    "",
    ...opTable("victim, warm-up (alone)", perOperation(victim.samples, 0, r.attackAt)),
    "",
    ...opTable("victim, under attack", perOperation(victim.samples, r.attackAt)),
    "",
  );

  // 0. Latchkey stays up.
  verdicts.push({
    bound: "Latchkey's process(es) stay up for the whole run",
    figure:
      r.exits.length === 0
        ? "up"
        : r.exits.map((e) => `${e.name} exited (${e.code ?? e.signal}) at ${at(e.at)}`).join("; "),
    pass: r.exits.length === 0,
  });
  if (r.exits.length > 0) {
    const tail = r.output
      .split("\n")
      .filter((l) => l.trim() !== "" && !l.startsWith("{"))
      .slice(-12);
    lines.push(
      "Latchkey exited; the last lines it wrote that are not log records:",
      "",
      "```",
      ...tail,
      "```",
      "",
    );
  }

  // 1. The victim's answers.
  const statuses = judgeStatuses(victim.samples, windows, FAIL_CLOSED);
  const failures = Object.entries(statuses.failures);
  const failureCount = failures.reduce((a, [, n]) => a + n, 0);
  lines.push(
    `answers: ${statuses.total}, 2xx ${statuses.ok}; 503 excused by a fault window: ${
      Object.entries(statuses.excused)
        .map(([d, n]) => `${d} ${n}`)
        .join(", ") || "none"
    }; failures ${failureCount} (${statuses.failuresInWindows} of them inside a fault window)`,
    ...failures.flatMap(([k, n]) => [
      `- failure: ${k}: ${n}`,
      ...causes(r.output, victim.failedIds[k] ?? []),
    ]),
    ...(victim.skipped > 0 ? [`- not sent (too many unanswered at once): ${victim.skipped}`] : []),
    ...victim.errors.slice(0, 12).map(([text, n]) => `- error answer ×${n}: ${text}`),
    "",
  );
  verdicts.push({
    bound: "victim: no 5xx, 4xx or unanswered request but 503s a fault window excuses",
    figure: `${failureCount} failures (${failures.map(([k, n]) => `${k}: ${n}`).join("; ") || "none"})${victim.skipped > 0 ? `; ${victim.skipped} not sent` : ""}`,
    pass: failureCount === 0 && victim.skipped === 0,
  });

  // 2. Verification latency alone and under attack.
  const alone = latencies(victim.samples, "keys.verifyKey", r.attackAt - (WARMUP_S - 5) * 1000, r.attackAt);
  const attacked = latencies(victim.samples, "keys.verifyKey", r.attackAt, r.endAt, windows);
  const attackedAll = latencies(victim.samples, "keys.verifyKey", r.attackAt, r.endAt);
  const p99Alone = percentile(alone, 99);
  const p99Attacked = percentile(attacked, 99);
  lines.push(
    `verification p99: alone ${ms(p99Alone)} (${alone.length}, p50 ${ms(percentile(alone, 50))}); under attack outside fault windows ${ms(p99Attacked)} (${attacked.length}, p50 ${ms(percentile(attacked, 50))}); under attack, faults included, ${ms(percentile(attackedAll, 99))}`,
  );
  verdicts.push({
    bound: `victim verification p99 under attack ≤ ${ms(BOUNDS.verifyP99Ms)} (its ratio to the p99 alone stated)`,
    figure: `${ms(p99Attacked)} (alone ${ms(p99Alone)}, ×${(p99Attacked / p99Alone).toFixed(1)})`,
    pass: p99Attacked <= BOUNDS.verifyP99Ms,
  });

  // 3. Webhook events.
  const events = judgeEvents(victim.expected, windows, BOUNDS.webhookP99Ms);
  lines.push(
    `webhook events: ${events.expected} expected, ${events.arrived} arrived (${victim.unexpected} unexpected, ${victim.repeats} repeats); measured ${events.measured}: p50 ${ms(events.p50)}, p99 ${ms(events.p99)}, max ${ms(events.max)}; p99 of all ${ms(events.p99All)}`,
  );
  if (victim.unexpectedSome.length > 0) lines.push(`- unexpected, e.g. ${victim.unexpectedSome.join(", ")}`);
  const byOp = new Map<string, number>();
  for (const e of events.missing) byOp.set(e.op, (byOp.get(e.op) ?? 0) + 1);
  for (const [op, n] of byOp) lines.push(`- never arrived: ${n} caused by ${op}`);
  lines.push(
    `- the victim's webhook still has ${victim.pending.count} deliveries pending${victim.pending.oldestS === undefined ? "" : ` (the oldest written ${victim.pending.oldestS.toFixed(0)} s before the end of the drain)`}${victim.pending.error ? ` (could not list them: ${victim.pending.error})` : ""}`,
  );
  lines.push(
    ...events.missing
      .slice(0, 5)
      .map((e) => `  e.g. ${e.event.split("|")[0]} caused at ${at(e.t)} by ${e.op}`),
  );
  verdicts.push({
    bound: `victim webhook delivery p99 ≤ ${BOUNDS.webhookP99Ms} ms (outside NATS and PostgreSQL fault windows)`,
    figure: `${ms(events.p99)} over ${events.measured} events`,
    pass: events.measured > 0 && events.p99 <= BOUNDS.webhookP99Ms,
  });

  // 4. Nothing lost: analytics count every answered verification, every caused event arrives.
  const counted = r.counted ?? {};
  const outcomes = [...new Set([...Object.keys(victim.verified), ...Object.keys(counted)])].sort();
  const lost = outcomes.reduce((a, o) => a + Math.max(0, (victim.verified[o] ?? 0) - (counted[o] ?? 0)), 0);
  const extra = outcomes.reduce((a, o) => a + Math.max(0, (counted[o] ?? 0) - (victim.verified[o] ?? 0)), 0);
  lines.push(
    r.counted === undefined
      ? "analytics: could not be asked at the end (Latchkey had exited, or never answered)"
      : `analytics: ${outcomes.map((o) => `${o} answered ${victim.verified[o] ?? 0}, counted ${counted[o] ?? 0}`).join("; ")}; ${victim.verifyUnanswered} verifications unanswered (5xx or none)`,
  );
  verdicts.push({
    bound: "events lost: 0 (every verification answered is counted in analytics; every event caused arrives)",
    figure: `${r.counted === undefined ? "analytics not answering" : `${lost} verifications not counted, ${extra} counted beyond those answered (of ${victim.verifyUnanswered} unanswered)`}; ${events.missing.length} webhook events never arrived`,
    pass:
      r.counted !== undefined &&
      lost === 0 &&
      extra <= victim.verifyUnanswered &&
      events.missing.length === 0,
  });

  // 5. Memory.
  const samples = MEMORY_SPAN_S / SAMPLE_EVERY_S;
  const redisDown = windows.filter((w) => w.dependency === "redis");
  const rssBase = memoryAt(r.rss, r.baselineAt, samples);
  const rssEnd = memoryAt(r.rss, r.endAt, samples);
  const redisBase = memoryAt(r.redisUsed, r.baselineAt, samples, redisDown);
  const redisEnd = memoryAt(r.redisUsed, r.endAt, samples, redisDown);
  const timeline = (s: { t: number; value: number }[]) =>
    s
      .filter((_, i) => i % Math.max(1, Math.round(30 / SAMPLE_EVERY_S)) === 0)
      .map((x) => `${((x.t - t0) / 1000).toFixed(0)}s ${x.value.toFixed(0)}`)
      .join(", ");
  lines.push(
    "",
    `RSS of Latchkey (MiB, every 30 s): ${timeline(r.rss)}`,
    `Redis used_memory (MiB, every 30 s): ${timeline(r.redisUsed)}`,
  );
  const rssGrowth = (rssEnd - rssBase) / rssBase;
  const redisGrowth = (redisEnd - redisBase) / redisBase;
  verdicts.push({
    bound: `RSS of Latchkey's process(es), end of ramp to end, ≤ +${BOUNDS.growth * 100} %`,
    figure:
      r.exits.length > 0
        ? "Latchkey exited"
        : `${rssBase.toFixed(0)} → ${rssEnd.toFixed(0)} MiB (${pct(rssGrowth)})`,
    pass: r.exits.length === 0 && rssGrowth <= BOUNDS.growth,
  });
  verdicts.push({
    bound: `Redis used_memory, end of ramp to end, ≤ +${BOUNDS.growth * 100} %`,
    figure: `${redisBase.toFixed(1)} → ${redisEnd.toFixed(1)} MiB (${pct(redisGrowth)})`,
    pass: redisGrowth <= BOUNDS.growth,
  });

  // The attacker, for the record.
  lines.push(
    "",
    "## Attacker",
    "",
    ...opTable("attacker, under attack", perOperation(attacker.samples)),
    "",
    `webhooks: ${attacker.webhooks.slow} slow (answering after ${WEBHOOK_TIMEOUT_MS - 500} ms), ${attacker.webhooks.failing} failing; attempts answered: slow ${attacker.slowAnswered}, failing ${attacker.failingAnswered}; re-enabled ${attacker.reenabled}`,
    `rate-limit counters: ${attacker.countersAsked} asked, ${attacker.countersGranted} granted; budget reached ${attacker.budgetReachedAt === undefined ? "never" : `at ${at(attacker.budgetReachedAt)}`} (memory baseline at ${at(r.baselineAt)})`,
    ...Object.entries(attacker.floods).map(
      ([name, f]) =>
        `flood of ${name}: ${Math.round(f.sent / Math.max(1, f.seconds))}/s sent, ${f.skipped} not sent; statuses ${JSON.stringify(f.statuses)}`,
    ),
    ...attacker.errors.slice(0, 8).map(([text, n]) => `- error answer ×${n}: ${text}`),
    "",
    "## CPU, % of one core (the machine has two)",
    "",
    "| process | warm-up | attack |",
    "|---------|---------|--------|",
    ...Object.entries(r.cpu).map(
      ([name, u]) =>
        `| ${name} | ${((u.warmup / (WARMUP_S * 1e6)) * 100).toFixed(0)} | ${((u.attack / (r.attackSeconds * 1e6)) * 100).toFixed(0)} |`,
    ),
    "",
    "## Redis at the end",
    "",
    ...r.redisInfo.map((l) => `- ${l}`),
    "",
    "## Background loops: longest without progress (latchkey_loop_last_progress_seconds)",
    "",
    ...(r.loopStale.size === 0
      ? ["no loop reports progress"]
      : [...r.loopStale.entries()].map(([loop, s]) => `- ${loop}: ${s.max.toFixed(1)} s (at ${at(s.at)})`)),
    "",
    "## Event-loop delay of Latchkey's process(es): the longest of each sample interval, ms",
    "",
    ...(["warmup", "attack"] as const).map((phase) => {
      const l = [...r.lag[phase]].sort((a, b) => a - b);
      const q = (p: number) =>
        l.length === 0 ? Number.NaN : l[Math.min(l.length - 1, Math.floor(p * l.length))]!;
      return `- ${phase === "warmup" ? "warm-up" : "attack"}: median ${q(0.5).toFixed(1)}, p90 ${q(0.9).toFixed(1)}, max ${q(1).toFixed(1)} over ${l.length} intervals`;
    }),
    "",
    "## Counters at the end (non-zero)",
    "",
    ...(r.metricsAtEnd.length === 0 ? ["none"] : r.metricsAtEnd.map((l) => `- ${l}`)),
    "",
    "## Bounds",
    "",
    "| bound | figure | verdict |",
    "|-------|--------|---------|",
    ...verdicts.map((v) => `| ${v.bound} | ${v.figure} | ${v.pass ? "pass" : "FAIL"} |`),
    "",
  );
  const failed = verdicts.filter((v) => !v.pass);
  lines.push(
    failed.length === 0 ? "every bound held" : `${failed.length} of ${verdicts.length} bounds failed`,
    "",
  );
  return { text: lines.join("\n"), failed: failed.length > 0 };
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);
