import autocannon from "autocannon";
import { cpuOf, type ProcessGroups } from "./procfs.ts";

/**
 * What every `npm run bench` table shares: autocannon with CONNECTIONS connections,
 * each target warmed up for WARMUP seconds, then measured RUNS times for
 * DURATION seconds; the median run is reported.
 */
export const CONNECTIONS = Number(process.env["CONNECTIONS"] ?? 64);
export const DURATION = Number(process.env["DURATION"] ?? 10);
export const RUNS = Number(process.env["RUNS"] ?? 3);
export const WARMUP = Number(process.env["WARMUP"] ?? 3);

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** CPU microseconds per request of each process group the target named, and of the load generator. */
  cpu?: Record<string, number>;
  /** Measured paired with the ceiling (measure's `ceiling`): this run's req/s over the ceiling's run just before it. */
  ratio?: number;
}

/** One POST target: a fixed body, or `body()` called once per request (e.g. a random key). */
export interface Target {
  url: string;
  /** POST unless said (forward-auth's proxy path is a GET without a body). */
  method?: "GET" | "POST";
  body: string | (() => string);
  headers?: Record<string, string>;
  /** When set, a 2xx answer whose body lacks this text counts as an error too (e.g. a verification that is not VALID). */
  expect?: string;
  /** The processes serving the target, whose CPU time per request is reported. */
  processes?: ProcessGroups;
  /** Connections of this load (default CONNECTIONS), e.g. a share of them per gateway. */
  connections?: number;
}

/** One autocannon load of `target` for `duration` seconds. */
export async function load(target: Target, duration: number): Promise<Figures> {
  const headers = { "content-type": "application/json", ...target.headers };
  const { body, expect } = target;
  let unexpected = 0;
  const onResponse =
    expect === undefined
      ? undefined
      : (status: number, text: string) => {
          if (status < 300 && !text.includes(expect)) unexpected++;
        };
  const groups = target.processes;
  const before = groups && cpuOf(groups);
  const ownBefore = process.cpuUsage();
  const method = target.method ?? "POST";
  const result = await autocannon({
    url: target.url,
    method,
    connections: target.connections ?? CONNECTIONS,
    duration,
    headers,
    ...(typeof body === "string" && onResponse === undefined
      ? { body }
      : {
          requests: [
            {
              method,
              headers,
              ...(typeof body === "string"
                ? { body }
                : { setupRequest: (req) => ({ ...req, body: body() }) }),
              ...(onResponse ? { onResponse } : {}),
            },
          ],
        }),
  });
  const perRequest = (micros: number) => micros / Math.max(1, result.requests.total);
  let cpu: Record<string, number> | undefined;
  if (groups && before) {
    const after = cpuOf(groups);
    const own = process.cpuUsage(ownBefore);
    cpu = { autocannon: perRequest(own.user + own.system) };
    for (const name of Object.keys(groups)) cpu[name] = perRequest(Math.max(0, after[name]! - before[name]!));
  }
  return {
    ...(cpu ? { cpu } : {}),
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts + unexpected,
  };
}

/**
 * Warms the target up, measures it RUNS times (3 by default, so one outlying
 * run does not decide) and answers the median run (the lower, for an even RUNS). With `ceiling`, each run of the target follows a run of the
 * ceiling and is judged by the ratio of the two: this shared machine's speed
 * drifts by 20 % or more within minutes, so only figures measured side by side
 * compare.
 */
export async function measure(name: string, target: Target, ceiling?: Target): Promise<Figures> {
  await load(target, WARMUP);
  const runs: Figures[] = [];
  for (let i = 0; i < RUNS; i++) {
    const top = ceiling && (await load(ceiling, DURATION));
    const run = await load(target, DURATION);
    runs.push(top ? { ...run, ratio: run.rps / top.rps } : run);
  }
  runs.sort((a, b) => (a.ratio ?? a.rps) - (b.ratio ?? b.rps));
  const median = runs[Math.floor((runs.length - 1) / 2)]!;
  const ratios = runs.some((r) => r.ratio !== undefined)
    ? ` (to the ceiling just before: ${runs.map((r) => r.ratio?.toFixed(2)).join(", ")})`
    : "";
  process.stderr.write(`  ${name}: ${runs.map((r) => Math.round(r.rps)).join(", ")} req/s${ratios}\n`);
  return median;
}

export const describeLoad = () =>
  `${CONNECTIONS} connections, ${RUNS} x ${DURATION}s after ${WARMUP}s warm-up`;

/** The throughput table's header, then one row per target with its ratio to the ceiling. */
export const header = (first = "target") => [
  `| ${first.padEnd(64)} |   req/s | p50 ms | p99 ms | ratio | errors |`,
  `|${"-".repeat(66)}|---------|--------|--------|-------|--------|`,
];

/** A target's ratio to the ceiling: its paired one (measure's `ceiling`), else against the ceiling's own run. */
export const ratioOf = (f: Figures, ceiling: Figures) => f.ratio ?? f.rps / ceiling.rps;

export const row = (name: string, f: Figures, ceiling: Figures) =>
  `| ${name.padEnd(64)} | ${Math.round(f.rps).toString().padStart(7)} | ${f.p50.toFixed(1).padStart(6)} | ${f.p99
    .toFixed(1)
    .padStart(6)} | ${ratioOf(f, ceiling).toFixed(2).padStart(5)} | ${String(f.non2xx).padStart(6)} |`;

/** CPU per request by process, one row per target: where the time goes. */
export function cpuTable(rows: [string, Figures][]): string[] {
  const names = [...new Set(rows.flatMap(([, f]) => Object.keys(f.cpu ?? {})))];
  const cell = (v: number | undefined) => (v === undefined ? "" : v.toFixed(0)).padStart(10);
  return [
    `| ${"CPU µs per request".padEnd(40)} |${names.map((n) => ` ${n.padStart(10)} |`).join("")}      total |`,
    `|${"-".repeat(42)}|${names.map(() => `${"-".repeat(12)}|`).join("")}------------|`,
    ...rows.map(([name, f]) => {
      const cpu = f.cpu ?? {};
      const total = Object.values(cpu).reduce((a, b) => a + b, 0);
      return `| ${name.padEnd(40)} |${names.map((n) => ` ${cell(cpu[n])} |`).join("")} ${cell(total)} |`;
    }),
  ];
}

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

/** RPCs served so far by method, summed over `urls` (latchkey_rpc_duration_seconds_count). */
export async function rpcCounts(urls: string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const m of text.matchAll(/^latchkey_rpc_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
      const method = /method="([^"]+)"/.exec(m[1]!)?.[1] ?? "?";
      counts.set(method, (counts.get(method) ?? 0) + Number(m[2]));
    }
  }
  return counts;
}
