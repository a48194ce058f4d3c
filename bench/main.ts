import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase } from "@latchkey/runtime/testing";
import autocannon from "autocannon";
import { type Proc, startProcess, startStack } from "../test/harness.ts";

/**
 * `pnpm bench`: throughput and latency of Latchkey beside a ceiling measured in
 * the same run (a bare Node HTTP server that parses the JSON body and answers a
 * fixed body of the same size), as ratios. autocannon, 64 connections, each
 * target warmed up, then measured RUNS times for DURATION seconds; the median
 * run is reported. A benchmark, not a test: it prints figures and asserts nothing.
 */
const CONNECTIONS = Number(process.env["CONNECTIONS"] ?? 64);
const DURATION = Number(process.env["DURATION"] ?? 10);
const RUNS = Number(process.env["RUNS"] ?? 2);
const WARMUP = Number(process.env["WARMUP"] ?? 3);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function load(
  url: string,
  body: string,
  headers: Record<string, string>,
  duration: number,
): Promise<Figures> {
  const result = await autocannon({
    url,
    method: "POST",
    connections: CONNECTIONS,
    duration,
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts,
  };
}

async function measure(name: string, url: string, body: string, headers: Record<string, string> = {}) {
  await load(url, body, headers, WARMUP);
  const runs: Figures[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await load(url, body, headers, DURATION));
  runs.sort((a, b) => a.rps - b.rps);
  const median = runs[Math.floor((runs.length - 1) / 2)]!;
  process.stderr.write(`  ${name}: ${runs.map((r) => Math.round(r.rps)).join(", ")} req/s\n`);
  return median;
}

const row = (name: string, f: Figures, ceiling: Figures) =>
  `| ${name.padEnd(64)} | ${Math.round(f.rps).toString().padStart(7)} | ${f.p50.toFixed(1).padStart(6)} | ${f.p99
    .toFixed(1)
    .padStart(6)} | ${(f.rps / ceiling.rps).toFixed(2).padStart(5)} | ${String(f.non2xx).padStart(5)} |`;

type Call = (operation: string, body: unknown) => Promise<{ status: number; body: any }>;

function caller(baseUrl: string, rootKey: string): Call {
  return async (operation, body) => {
    const res = await fetch(`${baseUrl}/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
}

/**
 * The verification issue 8 measures: a key with credits, one autoApply rate
 * limit, two roles, and a permission query over the roles' permissions.
 * Answers the request body, and a label saying what the key holds.
 */
async function seedFullVerification(call: Call, apiId: string): Promise<{ body: string; label: string }> {
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
  if (full.status !== 200) throw new Error(`could not create the issue-8 key: ${JSON.stringify(full.body)}`);
  const body = { key: full.body.data.key, permissions: "documents.read AND documents.write" };
  const check = await call("keys.verifyKey", body);
  if (check.body.data?.code !== "VALID")
    throw new Error(`the issue-8 key does not verify: ${JSON.stringify(check.body)}`);
  return { body: JSON.stringify(body), label: "credits, autoApply limit, 2 roles, permission query" };
}

async function main() {
  // PROFILE=1 writes CPU profiles of the gateway and the keys service to .bench/ (node --cpu-prof).
  const profile = process.env["PROFILE"] ? { NODE_OPTIONS: "--cpu-prof --cpu-prof-dir=.bench" } : undefined;
  const stack = await startStack(profile ? { env: { gateway: profile, keys: profile } } : {});
  const peers: Proc[] = [];
  const allInOneDb = await createTestDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-bench-"));
  try {
    const call: Call = (op, body) => stack.call(op, body);
    const apiId = (await call("apis.createApi", { name: "bench" })).body.data.apiId;
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

    // The same through `pnpm start`: every service in one process, on the same PostgreSQL.
    const rootKey = `lk_root_bench_${Date.now()}`;
    const allInOne = await startProcess("latchkey", "packages/latchkey/src/start.ts", {
      DATABASE_URL: allInOneDb.url,
      DATA_DIR: dataDir,
      LATCHKEY_ROOT_KEY: rootKey,
      NATS_URL: "",
      CLICKHOUSE_URL: "",
      LOG_LEVEL: "warn",
    });
    peers.push(allInOne);
    const callAllInOne = caller(allInOne.url, rootKey);
    const fullAllInOne = await seedFullVerification(
      callAllInOne,
      (await callAllInOne("apis.createApi", { name: "bench" })).body.data.apiId,
    );

    const ceiling = await startProcess("ceiling", "bench/ceiling.ts", { BODY_SIZE: String(size) });
    peers.push(ceiling);
    const rlflex = await startProcess("rate-limiter-flexible", "bench/rlflex-server.ts", {});
    peers.push(rlflex);
    const auth = { authorization: `Bearer ${stack.rootKey}` };
    const gw = (op: string) => `${stack.gateway.url}/v2/${op}`;

    process.stderr.write(
      `measuring (${CONNECTIONS} connections, ${RUNS} x ${DURATION}s after ${WARMUP}s warm-up)\n`,
    );
    const top = await measure("ceiling", `${ceiling.url}/`, full.body);
    const verifyUnlimited = await measure(
      "verify unlimited",
      gw("keys.verifyKey"),
      JSON.stringify({ key: unlimited }),
      auth,
    );
    const verifyFull = await measure("verify full", gw("keys.verifyKey"), full.body, auth);
    const verifyAllInOne = await measure(
      "verify all-in-one",
      `${allInOne.url}/v2/keys.verifyKey`,
      fullAllInOne.body,
      {
        authorization: `Bearer ${rootKey}`,
      },
    );
    const limit = await measure("ratelimits.limit", gw("ratelimits.limit"), limitBody, auth);
    const peer = await measure("rate-limiter-flexible", `${rlflex.url}/`, limitBody);

    const lines = [
      "",
      `| target${" ".repeat(58)} |   req/s | p50 ms | p99 ms | ratio | errors |`,
      `|${"-".repeat(66)}|---------|--------|--------|-------|-------|`,
      row("ceiling: bare node:http, JSON in and out", top, top),
      row("keys.verifyKey, unlimited key (separate processes)", verifyUnlimited, top),
      row(`keys.verifyKey, ${full.label} (separate processes)`, verifyFull, top),
      row(`keys.verifyKey, the same, pnpm start (one process)`, verifyAllInOne, top),
      row("ratelimits.limit through the gateway", limit, top),
      row("rate-limiter-flexible on Redis, bare node:http", peer, top),
      "",
      `ratelimits.limit / rate-limiter-flexible: ${(limit.rps / peer.rps).toFixed(2)}`,
      "",
    ];
    process.stdout.write(lines.join("\n"));
  } finally {
    await Promise.all(peers.map((p) => p.stop()));
    await stack.stop();
    await allInOneDb.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
