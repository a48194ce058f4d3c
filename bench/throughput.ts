import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import { type Proc, startProcess, startStack } from "../test/testing/process-stack.ts";
import {
  type Call,
  caller,
  cpuTable,
  describeLoad,
  header,
  measure,
  ratioOf,
  row,
  type Target,
} from "./load.ts";
import { type ProcessGroups, pidsMatching, postgresOf, treeOf } from "./procfs.ts";
import { fillTable } from "./seed.ts";

/**
 * The verification docs/performance.md measures: a key with credits, one autoApply rate
 * limit, two roles, and a permission query over the roles' permissions.
 * Answers the request body, and a label saying what the key holds.
 */
export async function seedFullVerification(
  call: Call,
  apiId: string,
): Promise<{ body: string; label: string }> {
  const roles: string[] = [];
  for (const [role, slug] of [
    ["bench-reader", "documents.read"],
    ["bench-writer", "documents.write"],
  ] as const) {
    await call("permissions.createPermission", { name: slug, slug });
    if ((await call("permissions.createRole", { name: role, permissions: [slug] })).status === 200)
      roles.push(role);
  }
  const full = await call("keys.createKey", {
    apiId,
    credits: { remaining: 1e12 },
    ratelimits: [{ name: "requests", limit: 1e9, duration: 60_000, autoApply: true }],
    roles,
  });
  if (full.status !== 200)
    throw new Error(`could not create the full-verification key: ${JSON.stringify(full.body)}`);
  const body = { key: full.body.data.key, permissions: "documents.read AND documents.write" };
  const check = await call("keys.verifyKey", body);
  if (check.body.data?.code !== "VALID")
    throw new Error(`the full-verification key does not verify: ${JSON.stringify(check.body)}`);
  return { body: JSON.stringify(body), label: "credits, autoApply limit, 2 roles, permission query" };
}

/**
 * `npm start`'s entry in a checkout. A checkout from before `apps/` existed kept it under `packages/`, so an
 * A/B run can compare against a commit from either side of the move.
 */
export function allInOneEntry(checkout: string): string | undefined {
  return ["apps/latchkey/src/start.ts", "packages/latchkey/src/start.ts"].find((entry) =>
    existsSync(join(checkout, entry)),
  );
}

/**
 * `npm start` as its own process (logs at warn), with the full-verification key seeded through it;
 * from `checkout` (another checkout with its dependencies installed) when given.
 */
export async function startAllInOne(env: Record<string, string>, checkout?: string) {
  const rootKey = `lk_root_bench_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  const here = "apps/latchkey/src/start.ts";
  const entry = checkout ? join(checkout, allInOneEntry(checkout) ?? here) : here;
  const proc = await startProcess("latchkey", entry, {
    DATABASE_URL: "",
    LATCHKEY_ROOT_KEY: rootKey,
    NATS_URL: "",
    CLICKHOUSE_URL: "",
    LOG_LEVEL: "warn",
    ...env,
  });
  const call = caller(proc.url, rootKey);
  const full = await seedFullVerification(
    call,
    (await call("apis.createApi", { name: "bench" })).body.data.apiId,
  );
  return { proc, call, full, auth: { authorization: `Bearer ${rootKey}` } };
}

/** The full verification through one `npm start`, with the processes whose CPU is counted. */
function verifyFullOn(started: Awaited<ReturnType<typeof startAllInOne>>, processes: ProcessGroups): Target {
  return {
    url: `${started.proc.url}/v2/keys.verifyKey`,
    body: started.full.body,
    headers: started.auth,
    processes,
  };
}

/**
 * `npm run bench` (BENCH=throughput): throughput and latency of Latchkey beside a ceiling measured in
 * the same run (a bare Node HTTP server that parses the JSON body and answers a
 * fixed body of the same size), as ratios. autocannon, 64 connections, each
 * target warmed up, then measured RUNS times for DURATION seconds, each run
 * right after a run of the ceiling; the median ratio (of three, by default) is
 * reported. A benchmark, not a test: it prints figures and asserts nothing.
 */
export async function throughput(): Promise<void> {
  // PROFILE=1 writes CPU profiles of the gateway and every service to .bench/ (node --cpu-prof).
  const profile = process.env["PROFILE"] ? ["--cpu-prof", "--cpu-prof-dir=.bench"] : [];
  // As in Kubernetes: verifications and checks are published to JetStream for analytics.
  const natsUrl = process.env["NATS_URL"] || "nats://127.0.0.1:4222";
  const stack = await startStack({ nodeArgs: profile, natsUrl });
  const peers: Proc[] = [];
  const allInOneDb = await createTestDatabase();
  const relaxedDb = await createTestDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-bench-"));
  try {
    const call: Call = (op, body) => stack.call(op, body);
    const apiId = (await call("apis.createApi", { name: "bench" })).body.data.apiId;
    await fillTable(call, stack.db.sql);
    const unlimited = (await call("keys.createKey", { apiId, prefix: "bench" })).body.data.key;
    const full = await seedFullVerification(call, apiId);
    const sample = await call("keys.verifyKey", JSON.parse(full.body));
    const size = JSON.stringify(sample.body).length;
    const limitBody = JSON.stringify({
      namespace: "bench",
      identifier: "user_1",
      limit: 1e9,
      duration: 60_000,
    });
    // Creates the namespace before measuring.
    await call("ratelimits.limit", JSON.parse(limitBody));

    // The same through `npm start`: every service in one process, on PostgreSQL, and on the
    // embedded default (PGlite in the process, no configuration at all).
    const allInOne = await startAllInOne({ DATABASE_URL: allInOneDb.url, DATA_DIR: dataDir });
    peers.push(allInOne.proc);
    await fillTable(allInOne.call, allInOneDb.sql);
    const embedded = await startAllInOne({ DATA_DIR: join(dataDir, "embedded") });
    peers.push(embedded.proc);
    await fillTable(embedded.call);
    // The documented trade of credits for speed (README: CREDITS_ASYNC_COMMIT), beside the exact default.
    const relaxed = await startAllInOne({
      DATABASE_URL: relaxedDb.url,
      DATA_DIR: join(dataDir, "relaxed"),
      CREDITS_ASYNC_COMMIT: "true",
    });
    peers.push(relaxed.proc);
    await fillTable(relaxed.call, relaxedDb.sql);
    const callAllInOne = allInOne.call;

    const ceiling = await startProcess("ceiling", "bench/ceiling.ts", { BODY_SIZE: String(size) });
    peers.push(ceiling);
    // rate-limiter-flexible and Latchkey's Redis store count in the same Redis.
    const redisUrl = process.env["REDIS_URL"] || "redis://127.0.0.1:6379";
    const rlflex = await startProcess("rate-limiter-flexible", "bench/rlflex-server.ts", {
      REDIS_URL: redisUrl,
    });
    peers.push(rlflex);
    // ratelimits.limit with RATELIMIT_STORE=redis: its own ratelimit process and a gateway in front of it.
    const redisRatelimit = await startProcess(
      "ratelimit-redis",
      "services/ratelimit/src/main.ts",
      {
        DATABASE_URL: stack.db.url,
        NATS_URL: natsUrl,
        RATELIMIT_STORE: "redis",
        REDIS_URL: redisUrl,
        RATELIMIT_REDIS_PREFIX: `bench:${Date.now()}:`,
      },
      undefined,
      profile,
    );
    peers.push(redisRatelimit);
    const redisGateway = await startProcess(
      "gateway-redis",
      "gateway/src/main.ts",
      {
        DATABASE_URL: stack.db.url,
        NATS_URL: natsUrl,
        KEYS_URL: stack.keys.map((k) => k.url).join(","),
        RATELIMIT_URL: redisRatelimit.url,
        IDENTITY_URL: stack.identity.url,
      },
      undefined,
      profile,
    );
    peers.push(redisGateway);
    const redisGw = `${redisGateway.url}/v2/ratelimits.limit`;
    await fetch(redisGw, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${stack.rootKey}` },
      body: limitBody,
    });
    const auth = { authorization: `Bearer ${stack.rootKey}` };
    const gw = (op: string) => `${stack.gateway.url}/v2/${op}`;
    // Each target's own database: other work on the same server is not counted.
    const postgresIn = (db: { url: string }) => postgresOf(db.url.split("/").pop()!);
    const postgres = postgresIn(stack.db);
    const separate = {
      gateway: treeOf(stack.gateway.child.pid),
      nats: () => pidsMatching("nats-server"),
      keys: treeOf(stack.keys[0]?.child.pid),
      ratelimit: treeOf(stack.ratelimit.child.pid),
      identity: treeOf(stack.identity.child.pid),
      postgres,
    };
    const oneProcess = { latchkey: treeOf(allInOne.proc.child.pid), postgres: postgresIn(allInOneDb) };
    await callAllInOne("ratelimits.limit", JSON.parse(limitBody));

    process.stderr.write(`throughput (${describeLoad()})\n`);
    const ceilingTarget = {
      url: `${ceiling.url}/`,
      body: full.body,
      processes: { server: treeOf(ceiling.child.pid) },
    };
    const top = await measure("ceiling", ceilingTarget);
    // Every target's runs are paired with runs of the ceiling.
    const paired = (name: string, target: Target) => measure(name, target, ceilingTarget);
    const verifyUnlimited = await paired("verify unlimited", {
      url: gw("keys.verifyKey"),
      body: JSON.stringify({ key: unlimited }),
      headers: auth,
      processes: separate,
    });
    const verifyFull = await paired("verify full", {
      url: gw("keys.verifyKey"),
      body: full.body,
      headers: auth,
      processes: separate,
    });
    const verifyAllInOne = await paired("verify all-in-one", verifyFullOn(allInOne, oneProcess));
    const verifyEmbedded = await paired(
      "verify all-in-one, embedded",
      verifyFullOn(embedded, { latchkey: treeOf(embedded.proc.child.pid) }),
    );
    const verifyRelaxed = await paired(
      "verify all-in-one, CREDITS_ASYNC_COMMIT",
      verifyFullOn(relaxed, { latchkey: treeOf(relaxed.proc.child.pid), postgres: postgresIn(relaxedDb) }),
    );
    const limit = await paired("ratelimits.limit", {
      url: gw("ratelimits.limit"),
      body: limitBody,
      headers: auth,
      processes: separate,
    });
    const limitAllInOne = await paired("ratelimits.limit all-in-one", {
      url: `${allInOne.proc.url}/v2/ratelimits.limit`,
      body: limitBody,
      headers: allInOne.auth,
      processes: oneProcess,
    });
    const limitRedis = await paired("ratelimits.limit, RATELIMIT_STORE=redis", {
      url: redisGw,
      body: limitBody,
      headers: auth,
      processes: {
        gateway: treeOf(redisGateway.child.pid),
        ratelimit: treeOf(redisRatelimit.child.pid),
        redis: () => pidsMatching("redis-server"),
      },
    });
    const peer = await paired("rate-limiter-flexible", {
      url: `${rlflex.url}/`,
      body: limitBody,
      processes: { server: treeOf(rlflex.child.pid), redis: () => pidsMatching("redis-server") },
    });

    const lines = [
      "",
      ...header(),
      row("ceiling: bare node:http, JSON in and out", top, top),
      row("keys.verifyKey, unlimited key (separate processes)", verifyUnlimited, top),
      row(`keys.verifyKey, ${full.label} (separate processes)`, verifyFull, top),
      row(`keys.verifyKey, the same, npm start (one process, PostgreSQL)`, verifyAllInOne, top),
      row(`keys.verifyKey, the same, npm start (one process, embedded PGlite)`, verifyEmbedded, top),
      row("keys.verifyKey, the same, npm start, CREDITS_ASYNC_COMMIT=true", verifyRelaxed, top),
      row("ratelimits.limit through the gateway (separate processes)", limit, top),
      row("ratelimits.limit, npm start (one process)", limitAllInOne, top),
      row("ratelimits.limit through the gateway, counters in Redis", limitRedis, top),
      row("rate-limiter-flexible on Redis, bare node:http", peer, top),
      "",
      // Each ratio is to the ceiling run just before it, so the machine's drift between them cancels out.
      `ratelimits.limit / rate-limiter-flexible: ${(ratioOf(limit, top) / ratioOf(peer, top)).toFixed(2)} separate processes, ${(
        ratioOf(limitAllInOne, top) / ratioOf(peer, top)
      ).toFixed(
        2,
      )} npm start, ${(ratioOf(limitRedis, top) / ratioOf(peer, top)).toFixed(2)} RATELIMIT_STORE=redis (the same Redis)`,
      "",
      ...cpuTable([
        ["ceiling", top],
        ["verify unlimited (separate)", verifyUnlimited],
        ["verify full (separate)", verifyFull],
        ["verify full (npm start)", verifyAllInOne],
        ["verify full (npm start, PGlite)", verifyEmbedded],
        ["verify full (npm start, async commit)", verifyRelaxed],
        ["ratelimits.limit (separate)", limit],
        ["ratelimits.limit (npm start)", limitAllInOne],
        ["ratelimits.limit (Redis store)", limitRedis],
        ["rate-limiter-flexible", peer],
      ]),
      "",
    ];
    process.stdout.write(lines.join("\n"));
  } finally {
    await Promise.all(peers.map((p) => p.stop()));
    await stack.stop();
    await allInOneDb.drop();
    await relaxedDb.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
