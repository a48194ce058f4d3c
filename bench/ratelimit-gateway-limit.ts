import { ensureRootKey } from "@latchkey/keys";
import { ownRedis } from "@latchkey/ratelimit/testing/redis";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { type Proc, startProcess } from "../test/testing/process-stack.ts";
import { cpuOf, type ProcessGroups, treeOf } from "./procfs.ts";
import { startAllInOne } from "./throughput.ts";

/**
 * ratelimits.limit through the gateway beside rate-limiter-flexible on Redis,
 * alternating, like `npm run bench` but only this pair (and with the ratelimit
 * service's entry chosen by RATELIMIT_ENTRY, relative to the repo root, so two
 * versions can be compared on the same machine in the same minutes):
 *   node --import tsx bench/ratelimit-gateway-limit.ts
 * ROUNDS (2), DURATION (5 s), CONNECTIONS (64), PROFILE (a directory for CPU
 * profiles of the ratelimit process and the gateway, in ratelimit/ and gateway/). STORE=redis counts in Redis
 * (RATELIMIT_STORE=redis), on a redis-server of this run's own that
 * rate-limiter-flexible uses too, so both pay for the same Redis. TOPOLOGY=start measures `npm start`
 * (gateway and services in one process) instead of separate processes.
 */
const ROUNDS = Number(process.env["ROUNDS"] ?? 2);
const DURATION = Number(process.env["DURATION"] ?? 5);
const CONNECTIONS = Number(process.env["CONNECTIONS"] ?? 64);
const STORE = process.env["STORE"] ?? "memory";
/** `separate` (the gateway and the services as processes of their own, as in Kubernetes) or `start` (`npm start`). */
const TOPOLOGY = process.env["TOPOLOGY"] ?? "separate";

/** Commands Redis has run so far (INFO commandstats), all of them and scripts alone. */
async function commandsOf(client: Redis | undefined): Promise<{ all: number; scripts: number }> {
  if (client === undefined) return { all: 0, scripts: 0 };
  let all = 0;
  let scripts = 0;
  for (const m of (await client.info("commandstats")).matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) {
    const calls = Number(m[2]);
    if (m[1] === "info") continue;
    all += calls;
    if (m[1] === "evalsha" || m[1] === "eval") scripts += calls;
  }
  return { all, scripts };
}

/**
 * Load for `duration` s; with `processes`, the CPU µs per request each group used meanwhile;
 * with `redis`, the requests per script call Redis ran (a batch's size) and its commands per request.
 */
async function load(
  url: string,
  body: string,
  headers: Record<string, string>,
  duration: number,
  processes: ProcessGroups = {},
  redis?: Redis,
) {
  const commands = await commandsOf(redis);
  const before = cpuOf(processes);
  const r = await autocannon({
    url,
    method: "POST",
    connections: CONNECTIONS,
    duration,
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const after = cpuOf(processes);
  const requests = r.requests.total as number;
  let cpu = Object.entries(after)
    .map(([name, us]) => `${name} ${Math.round((us - before[name]!) / requests)}`)
    .join(", ");
  if (redis !== undefined) {
    const ran = await commandsOf(redis);
    const scripts = ran.scripts - commands.scripts;
    cpu += `; Redis: ${scripts > 0 ? (requests / scripts).toFixed(1) : "-"} requests per script call, ${((ran.all - commands.all) / requests).toFixed(2)} commands per request`;
  }
  return { rps: r.requests.average as number, p99: r.latency.p99 as number, bad: r.non2xx + r.errors, cpu };
}

const db = await createTestDatabase();
const procs: Proc[] = [];
const redis = await ownRedis();
let counting: Redis | undefined;
try {
  const env = { DATABASE_URL: db.url, LOG_LEVEL: "warn" };
  const store: Record<string, string> =
    STORE === "redis" ? { RATELIMIT_STORE: "redis", REDIS_URL: redis.url } : {};
  // PROFILE=dir writes CPU profiles of the ratelimit process and the gateway there when they stop.
  const profile = process.env["PROFILE"];
  const profileTo = (name: string) => (profile ? ["--cpu-prof", "--cpu-prof-dir", `${profile}/${name}`] : []);
  let url: string;
  let auth: Record<string, string>;
  let entry: string;
  let ourProcesses: ProcessGroups;
  if (TOPOLOGY === "start") {
    // `npm start`: the gateway and the ratelimit service in one process, on the same PostgreSQL and Redis.
    const started = await startAllInOne({ DATABASE_URL: db.url, ...store });
    procs.push(started.proc);
    url = started.proc.url;
    auth = started.auth;
    entry = "npm start";
    ourProcesses = { latchkey: treeOf(started.proc.child.pid) };
  } else {
    const keys = await startProcess("keys", "services/keys/src/main.ts", env);
    procs.push(keys);
    entry = process.env["RATELIMIT_ENTRY"] ?? "services/ratelimit/src/main.ts";
    const ratelimit = await startProcess(
      "ratelimit",
      entry,
      { ...env, ...store },
      undefined,
      profileTo("ratelimit"),
    );
    procs.push(ratelimit);
    const identity = await startProcess("identity", "services/identity/src/main.ts", env);
    procs.push(identity);
    const gateway = await startProcess(
      "gateway",
      "gateway/src/main.ts",
      {
        ...env,
        KEYS_URL: keys.url,
        RATELIMIT_URL: ratelimit.url,
        IDENTITY_URL: identity.url,
      },
      undefined,
      profileTo("gateway"),
    );
    procs.push(gateway);
    const rootKey = `lk_root_bench_${Date.now()}`;
    await ensureRootKey(db.sql, rootKey);
    url = gateway.url;
    auth = { authorization: `Bearer ${rootKey}` };
    ourProcesses = { gateway: treeOf(gateway.child.pid), ratelimit: treeOf(ratelimit.child.pid) };
  }
  const rlflex = await startProcess("rate-limiter-flexible", "bench/rlflex-server.ts", {
    REDIS_URL: redis.url,
  });
  procs.push(rlflex);
  const body = JSON.stringify({ namespace: "bench", identifier: "user_1", limit: 1e9, duration: 60_000 });
  const first = await fetch(`${url}/v2/ratelimits.limit`, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth },
    body,
  });
  if (first.status !== 200)
    throw new Error(`ratelimits.limit answered ${first.status}: ${await first.text()}`);
  await load(`${url}/v2/ratelimits.limit`, body, auth, 2);
  await load(`${rlflex.url}/`, body, {}, 2);
  const redisServer = () => {
    const pid = redis.pid();
    return pid === undefined ? [] : [pid];
  };
  ourProcesses.redis = redisServer;
  const peerProcesses = { server: treeOf(rlflex.child.pid), redis: redisServer };
  // Only the run's own Redis is asked for its command counts.
  counting = new Redis(redis.url);
  for (let i = 0; i < ROUNDS; i++) {
    const ours = await load(
      `${url}/v2/ratelimits.limit`,
      body,
      auth,
      DURATION,
      ourProcesses,
      STORE === "redis" ? counting : undefined,
    );
    const peer = await load(`${rlflex.url}/`, body, {}, DURATION, peerProcesses, counting);
    process.stdout.write(
      `${entry} (${STORE}): latchkey ${Math.round(ours.rps)} req/s (p99 ${ours.p99} ms, ${ours.bad} bad; µs CPU/req ${ours.cpu}) · rate-limiter-flexible ${Math.round(peer.rps)} req/s (p99 ${peer.p99} ms; µs CPU/req ${peer.cpu}) · ratio ${(ours.rps / peer.rps).toFixed(2)}\n`,
    );
  }
} finally {
  counting?.disconnect();
  for (const p of procs.reverse()) await p.stop();
  await redis.stop();
  await db.drop();
}
