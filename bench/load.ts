import autocannon from "autocannon";

/**
 * What every `pnpm bench` table shares: autocannon with CONNECTIONS connections,
 * each target warmed up for WARMUP seconds, then measured RUNS times for
 * DURATION seconds; the median run is reported.
 */
export const CONNECTIONS = Number(process.env["CONNECTIONS"] ?? 64);
export const DURATION = Number(process.env["DURATION"] ?? 10);
export const RUNS = Number(process.env["RUNS"] ?? 2);
export const WARMUP = Number(process.env["WARMUP"] ?? 3);

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

/** One POST target: a fixed body, or `body()` called once per request (e.g. a random key). */
export interface Target {
  url: string;
  body: string | (() => string);
  headers?: Record<string, string>;
  /** When set, a 2xx answer whose body lacks this text counts as an error too (e.g. a verification that is not VALID). */
  expect?: string;
}

async function load(target: Target, duration: number): Promise<Figures> {
  const headers = { "content-type": "application/json", ...target.headers };
  const { body, expect } = target;
  let unexpected = 0;
  const onResponse =
    expect === undefined
      ? undefined
      : (status: number, text: string) => {
          if (status < 300 && !text.includes(expect)) unexpected++;
        };
  const result = await autocannon({
    url: target.url,
    method: "POST",
    connections: CONNECTIONS,
    duration,
    headers,
    ...(typeof body === "string" && onResponse === undefined
      ? { body }
      : {
          requests: [
            {
              method: "POST",
              headers,
              ...(typeof body === "string"
                ? { body }
                : { setupRequest: (req) => ({ ...req, body: body() }) }),
              ...(onResponse ? { onResponse } : {}),
            },
          ],
        }),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts + unexpected,
  };
}

/** Warms the target up, measures it RUNS times and answers the median run. */
export async function measure(name: string, target: Target): Promise<Figures> {
  await load(target, WARMUP);
  const runs: Figures[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await load(target, DURATION));
  runs.sort((a, b) => a.rps - b.rps);
  const median = runs[Math.floor((runs.length - 1) / 2)]!;
  process.stderr.write(`  ${name}: ${runs.map((r) => Math.round(r.rps)).join(", ")} req/s\n`);
  return median;
}

export const describeLoad = () =>
  `${CONNECTIONS} connections, ${RUNS} x ${DURATION}s after ${WARMUP}s warm-up`;

/** The throughput table's header, then one row per target with its ratio to the ceiling. */
export const header = (first = "target") => [
  `| ${first.padEnd(64)} |   req/s | p50 ms | p99 ms | ratio | errors |`,
  `|${"-".repeat(66)}|---------|--------|--------|-------|--------|`,
];

export const row = (name: string, f: Figures, ceiling: Figures) =>
  `| ${name.padEnd(64)} | ${Math.round(f.rps).toString().padStart(7)} | ${f.p50.toFixed(1).padStart(6)} | ${f.p99
    .toFixed(1)
    .padStart(6)} | ${(f.rps / ceiling.rps).toFixed(2).padStart(5)} | ${String(f.non2xx).padStart(6)} |`;

export type Call = (operation: string, body: unknown) => Promise<{ status: number; body: any }>;

/** POST /v2/<operation> on a gateway with a root key, answering status and parsed body. */
export function caller(baseUrl: string, rootKey: string): Call {
  return async (operation, body) => {
    const res = await fetch(`${baseUrl}/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed };
  };
}
