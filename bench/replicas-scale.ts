import { ensureRootKey } from "@latchkey/keys";
import { CONTEXTS, GATEWAY_PROCESS } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { type Proc, startProcess } from "../test/testing/process-stack.ts";
import { CONNECTIONS, caller, DURATION, load, rpcCounts, type Target, WARMUP } from "./load.ts";
import { cpuOf, type ProcessGroups, pidsMatching, postgresOf, treeOf } from "./procfs.ts";
import { startRatelimitReplicas } from "./replicas.ts";
import { fillTable } from "./seed.ts";
import { seedFullVerification } from "./throughput.ts";

/** The replica counts measured (REPLICAS, comma-separated; default 1,2,3). */
const counts = () =>
  (process.env["REPLICAS"] ?? "1,2,3")
    .split(",")
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);

/** How long the processes' CPU is read with no load, before the load. */
const IDLE_MS = 3_000;

/** Keys verified (FULL_KEYS, default 1: one hot key; more: each request one of them at random). */
const FULL_KEYS = Number(process.env["FULL_KEYS"] ?? 1);

/** One deployment of N gateways, N keys services and N ratelimit replicas on one PostgreSQL. */
interface Deployment {
  db: TestDatabase;
  gateways: Proc[];
  keys: Proc[];
  ratelimit: Proc[];
  identity: Proc;
  rootKey: string;
  stop(): Promise<void>;
}

async function deploy(n: number, natsUrl: string): Promise<Deployment> {
  const db = await createTestDatabase();
  const started: Proc[] = [];
  try {
    const common = { DATABASE_URL: db.url, NATS_URL: natsUrl };
    // The ratelimit replicas share each budget (RATELIMIT_PEERS): a counter is owned by one of them.
    const ratelimit = await startRatelimitReplicas(db.url, natsUrl, n);
    started.push(...ratelimit);
    const ratelimitUrl = ratelimit.map((p) => p.url).join(",");
    const identity = await startProcess("identity", CONTEXTS.identity.entry, common);
    started.push(identity);
    const keys: Proc[] = [];
    for (let i = 0; i < n; i++) {
      // One at a time: each runs the migrations at start, under an advisory lock.
      const p = await startProcess(`keys-${i}`, CONTEXTS.keys.entry, {
        ...common,
        RATELIMIT_URL: ratelimitUrl,
        IDENTITY_URL: identity.url,
      });
      keys.push(p);
      started.push(p);
    }
    // Every gateway is given every keys service and every ratelimit replica, in turn, as a Kubernetes Service would.
    const gateways = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        startProcess(`gateway-${i}`, GATEWAY_PROCESS.entry, {
          ...common,
          KEYS_URL: keys.map((p) => p.url).join(","),
          RATELIMIT_URL: ratelimitUrl,
          IDENTITY_URL: identity.url,
        }),
      ),
    );
    started.push(...gateways);
    const rootKey = `lk_root_scale_${Math.random().toString(36).slice(2)}`;
    await ensureRootKey(db.sql, rootKey);
    return {
      db,
      gateways,
      keys,
      ratelimit,
      identity,
      rootKey,
      async stop() {
        await Promise.all(started.map((p) => p.stop()));
        await db.drop();
      },
    };
  } catch (err) {
    await Promise.all(started.map((p) => p.stop()));
    await db.drop();
    throw err;
  }
}

interface Sampled {
  samples: number;
  /** Backends of the database by what they were doing, summed over the samples. */
  states: Map<string, number>;
}

/** pg_stat_activity of `db`'s backends, sampled every 50 ms until `until` settles. */
async function sampleActivity(db: TestDatabase, name: string, until: Promise<unknown>): Promise<Sampled> {
  const sampled: Sampled = { samples: 0, states: new Map() };
  let done = false;
  void until.finally(() => {
    done = true;
  });
  while (!done) {
    const rows = await db.sql<{ what: string; n: number }[]>`SELECT
        CASE WHEN state = 'active' THEN 'active: ' || COALESCE(wait_event_type || '/' || wait_event, 'on CPU')
          ELSE COALESCE(state, 'other') END AS what, count(*)::int AS n
      FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid() GROUP BY 1`;
    sampled.samples++;
    for (const r of rows) sampled.states.set(r.what, (sampled.states.get(r.what) ?? 0) + r.n);
    await new Promise((r) => setTimeout(r, 50));
  }
  return sampled;
}

/**
 * `npm run bench` (BENCH=replicas): the full verification through N gateways,
 * N keys services and N ratelimit replicas (sharing each budget) on one
 * PostgreSQL and one NATS, for each N of REPLICAS (1, 2, 3), of one key
 * (FULL_KEYS 1, the default) or of FULL_KEYS keys of the same shape, one at
 * random per request. The load is
 * CONNECTIONS connections spread evenly over the gateways (an autocannon per
 * gateway, all in this process, CONNECTIONS / N connections each), as a load
 * balancer spreading connections would; each gateway spreads its batches over
 * every keys service in turn. Prints, per N, throughput, latency and CPU per
 * request of each kind of process, and what PostgreSQL's backends of the
 * database were doing (pg_stat_activity, sampled every 50 ms) and how many of
 * the keys table's updates were HOT: where the replicas wait on each other.
 * On a machine with fewer cores than processes the throughput says little;
 * CPU per request and the waits are the figures to read.
 */
export async function replicasScale(): Promise<void> {
  const natsUrl = process.env["NATS_URL"] || "nats://127.0.0.1:4222";
  const lines: string[] = [];
  const rows: string[] = [];
  for (const n of counts()) {
    const d = await deploy(n, natsUrl);
    try {
      const call = caller(d.gateways[0]!.url, d.rootKey);
      await fillTable(call, d.db.sql);
      const apiId = (await call("apis.createApi", { name: "replicas" })).body.data.apiId;
      const full = await seedFullVerification(call, apiId);
      // FULL_KEYS > 1: as many keys of the same shape (the roles exist now), one at random per request.
      const bodies = [full.body];
      while (bodies.length < FULL_KEYS) {
        const created = await call("keys.createKey", {
          apiId,
          credits: { remaining: 1e12 },
          ratelimits: [{ name: "requests", limit: 1e9, duration: 60_000, autoApply: true }],
          roles: ["bench-reader", "bench-writer"],
        });
        bodies.push(JSON.stringify({ ...JSON.parse(full.body), key: created.body.data.key }));
      }
      const perGateway = Math.max(1, Math.floor(CONNECTIONS / n));
      const targets: Target[] = d.gateways.map((g) => ({
        url: `${g.url}/v2/keys.verifyKey`,
        body: bodies.length === 1 ? full.body : () => bodies[Math.floor(Math.random() * bodies.length)]!,
        headers: { authorization: `Bearer ${d.rootKey}` },
        expect: '"code":"VALID"',
        connections: perGateway,
      }));
      // Every keys service and gateway warmed (caches filled) before the measurement.
      await Promise.all(targets.map((t) => load(t, WARMUP)));
      const groups: ProcessGroups = {
        gateways: () => d.gateways.map((p) => p.child.pid!),
        keys: () => d.keys.map((p) => p.child.pid!),
        ratelimit: () => d.ratelimit.map((p) => p.child.pid!),
        identity: treeOf(d.identity.child.pid),
        nats: () => pidsMatching("nats-server"),
        postgres: postgresOf(d.db.url.split("/").pop()!),
      };
      const dbName = d.db.url.split("/").pop()!;
      const [stats0] = await d.db.sql<{ upd: number; hot: number; commits: number }[]>`SELECT
          (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'keys')::bigint AS upd,
          (SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'keys')::bigint AS hot,
          (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::bigint AS commits`;
      // What the processes spend with no load at all (timers, sweeps, the bus): at a low rate it weighs
      // on the CPU per request.
      const idle0 = cpuOf(groups);
      await new Promise((r) => setTimeout(r, IDLE_MS));
      const idle1 = cpuOf(groups);
      const services = [...d.keys, ...d.ratelimit].map((p) => p.url);
      const calls0 = await rpcCounts(services);
      const before = cpuOf(groups);
      const running = Promise.all(targets.map((t) => load(t, DURATION)));
      const activity = sampleActivity(d.db, dbName, running);
      const figures = await running;
      const after = cpuOf(groups);
      const calls1 = await rpcCounts(services);
      const sampled = await activity;
      // Statistics reach pg_stat_* when a backend is idle; the load has just stopped.
      await new Promise((r) => setTimeout(r, 700));
      const [stats1] = await d.db.sql<{ upd: number; hot: number; commits: number }[]>`SELECT
          (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'keys')::bigint AS upd,
          (SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'keys')::bigint AS hot,
          (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::bigint AS commits`;
      const rps = figures.reduce((sum, f) => sum + f.rps, 0);
      const requests = rps * DURATION;
      const errors = figures.reduce((sum, f) => sum + f.non2xx, 0);
      const p99 = Math.max(...figures.map((f) => f.p99));
      const cpu = Object.keys(groups).map((name) => (after[name]! - before[name]!) / requests);
      const total = cpu.reduce((a, b) => a + b, 0);
      rows.push(
        `| ${String(n).padStart(2)} | ${Math.round(rps).toString().padStart(7)} | ${String(p99).padStart(6)} | ${String(errors).padStart(6)} |${cpu
          .map((c) => ` ${c.toFixed(0).padStart(9)} |`)
          .join("")} ${total.toFixed(0).padStart(6)} |`,
      );
      const upd = Number(stats1!.upd) - Number(stats0!.upd);
      const hot = Number(stats1!.hot) - Number(stats0!.hot);
      const commits = Number(stats1!.commits) - Number(stats0!.commits);
      const states = [...sampled.states]
        .sort((a, b) => b[1] - a[1])
        .map(([what, count]) => `${what} ${(count / sampled.samples).toFixed(2)}`)
        .join(", ");
      const perCall = [...calls1]
        .map(([method, count]) => [method, count - (calls0.get(method) ?? 0)] as const)
        .filter(([, count]) => count > 0)
        .map(([method, count]) => `${method} ${(requests / count).toFixed(1)}`)
        .join(", ");
      const idle = Object.keys(groups)
        .map((name) => `${name} ${((idle1[name]! - idle0[name]!) / IDLE_MS).toFixed(0)}`)
        .join(", ");
      lines.push(
        `N = ${n}: verifications per call served: ${perCall}; idle CPU, ms per second: ${idle}`,
        `N = ${n}: keys rows updated ${upd} (${upd === 0 ? 0 : Math.round((100 * hot) / upd)} % HOT), ${commits} commits (${(requests / Math.max(1, commits)).toFixed(1)} verifications per commit); backends of the database, on average: ${states}`,
      );
    } finally {
      await d.stop();
    }
  }
  const names = ["gateways", "keys", "ratelimit", "identity", "nats", "postgres"];
  process.stdout.write(
    [
      "",
      `full verification of ${FULL_KEYS === 1 ? "one key" : `${FULL_KEYS} keys at random`} through N gateways, N keys services, N ratelimit replicas (${CONNECTIONS} connections spread over the gateways, ${DURATION} s after ${WARMUP} s${process.env["CREDITS_ASYNC_COMMIT"] === "true" ? ", CREDITS_ASYNC_COMMIT=true" : ""})`,
      "",
      `|  N |   req/s | p99 ms | errors |${names.map((n) => ` ${n.padStart(9)} |`).join("")}  total |`,
      `|----|---------|--------|--------|${names.map(() => "-----------|").join("")}--------|`,
      ...rows,
      "",
      "CPU: µs per request, all the processes of a kind together; postgres: the database's backends and the server's writers.",
      ...lines,
      "",
    ].join("\n"),
  );
}
