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
  `| ${name.padEnd(54)} | ${Math.round(f.rps).toString().padStart(7)} | ${f.p50.toFixed(1).padStart(6)} | ${f.p99
    .toFixed(1)
    .padStart(6)} | ${(f.rps / ceiling.rps).toFixed(2).padStart(5)} | ${String(f.non2xx).padStart(5)} |`;

async function main() {
  const stack = await startStack();
  const peers: Proc[] = [];
  try {
    const api = await stack.call("apis.createApi", { name: "bench" });
    const apiId = api.body.data.apiId;
    const unlimited = (await stack.call("keys.createKey", { apiId, prefix: "bench" })).body.data.key;
    const metered = (
      await stack.call("keys.createKey", { apiId, prefix: "bench", credits: { remaining: 1e12 } })
    ).body.data.key;
    const sample = await stack.call("keys.verifyKey", { key: unlimited });
    const size = JSON.stringify(sample.body).length;
    const limitBody = JSON.stringify({
      namespace: "bench",
      identifier: "user_1",
      limit: 1e9,
      duration: 60_000,
    });
    // Creates the namespace before measuring.
    await stack.call("ratelimits.limit", JSON.parse(limitBody));

    const ceiling = await startProcess("ceiling", "bench/ceiling.ts", { BODY_SIZE: String(size) });
    peers.push(ceiling);
    const rlflex = await startProcess("rate-limiter-flexible", "bench/rlflex-server.ts", {});
    peers.push(rlflex);
    const auth = { authorization: `Bearer ${stack.rootKey}` };
    const gw = (op: string) => `${stack.gateway.url}/v2/${op}`;

    process.stderr.write(
      `measuring (${CONNECTIONS} connections, ${RUNS} x ${DURATION}s after ${WARMUP}s warm-up)\n`,
    );
    const top = await measure("ceiling", `${ceiling.url}/`, JSON.stringify({ key: unlimited }));
    const verifyUnlimited = await measure(
      "verify unlimited",
      gw("keys.verifyKey"),
      JSON.stringify({ key: unlimited }),
      auth,
    );
    const verifyCredits = await measure(
      "verify credits",
      gw("keys.verifyKey"),
      JSON.stringify({ key: metered }),
      auth,
    );
    const limit = await measure("ratelimits.limit", gw("ratelimits.limit"), limitBody, auth);
    const peer = await measure("rate-limiter-flexible", `${rlflex.url}/`, limitBody);

    const lines = [
      "",
      `| target${" ".repeat(48)} |   req/s | p50 ms | p99 ms | ratio | errors |`,
      `|${"-".repeat(56)}|---------|--------|--------|-------|-------|`,
      row("ceiling: bare node:http, JSON in and out", top, top),
      row("keys.verifyKey, unlimited key (separate processes)", verifyUnlimited, top),
      row("keys.verifyKey, key with credits (separate processes)", verifyCredits, top),
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
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
