import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import { startProcess, startStack } from "../test/testing/process-stack.ts";
import { caller, cpuTable, load, rpcCounts, type Target } from "./load.ts";
import { descendants, pidsMatching, postgresOf, syscallsOf, treeOf } from "./procfs.ts";
import { fillTable } from "./seed.ts";
import { seedFullVerification } from "./throughput.ts";

/**
 * `npx tsx bench/profile.ts`: where one target's CPU goes, per process. Starts
 * the target's processes with `node --cpu-prof`, loads the target for
 * DURATION (10) seconds after WARMUP, prints the CPU per request of every
 * process (from /proc), stops them and prints, per process, the TOP (25)
 * functions by self time and the share of each place (a file of the
 * repository, a package of node_modules, node's own code, the garbage
 * collector). Profiles are kept in PROFILE_DIR (bench/.bench/profile-<time>).
 *
 * Settings (env): TARGET full (default) or unlimited; TOPOLOGY stack (default:
 * separate processes, events through NATS_URL) or start (`npm start` on a
 * PostgreSQL test database); CONNECTIONS (64); DURATION; TOP.
 * The profiler itself costs CPU: compare shares, and take CPU per request from
 * `npm run bench` or `npm run bench:ab`.
 */
const TARGET = process.env["TARGET"] ?? "full";
const TOPOLOGY = process.env["TOPOLOGY"] ?? "stack";
const DURATION = Number(process.env["DURATION"] ?? 10);
const TOP = Number(process.env["TOP"] ?? 25);
const PERF = process.env["PERF"] === "1";
const DEOPT = process.env["DEOPT"] === "1";
const PROFILING = process.env["CPU_PROF"] !== "0" && !PERF && !DEOPT;
const repo = join(import.meta.dirname, "..");

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: a repository file, a package, node itself, or a V8 pseudo-frame. */
function placeOf(url: string, name: string): string {
  if (url === "") return name.startsWith("(") ? name : "(native)";
  if (url.startsWith("node:")) return "node";
  const path = url.replace(/^file:\/\//, "");
  const pkg = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1]!;
  return relative(repo, path);
}

/**
 * Self time per function and per place, in ms, of one .cpuprofile; only the
 * samples within `window` (CLOCK_MONOTONIC µs, as process.hrtime and V8's
 * profiler count), so the start and the seeding are left out.
 */
export function summarise(file: string, window?: [number, number], top = TOP): string[] {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window[0] || at > window[1])) return;
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    self.set(id, (self.get(id) ?? 0) + dt);
    total += dt;
  });
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  for (const [id, ms] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const place = placeOf(url, functionName);
    const fn = `${functionName || "(anonymous)"} ${place}${url ? `:${lineNumber + 1}` : ""}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
    byPlace.set(place, (byPlace.get(place) ?? 0) + ms);
  }
  const idle = self.get(profile.nodes.find((n) => n.callFrame.functionName === "(idle)")?.id ?? -1) ?? 0;
  const busy = total - idle;
  const pct = (ms: number) => `${((100 * ms) / busy).toFixed(1).padStart(5)} %`;
  const sorted = (m: Map<string, number>) =>
    [...m].filter(([k]) => !k.startsWith("(idle)")).sort((a, b) => b[1] - a[1]);
  return [
    `busy ${busy.toFixed(0)} ms of ${total.toFixed(0)} ms`,
    "  by place:",
    ...sorted(byPlace)
      .slice(0, top)
      .map(([k, ms]) => `    ${pct(ms)}  ${k}`),
    "  by function (self):",
    ...sorted(byFunction)
      .slice(0, top)
      .map(([k, ms]) => `    ${pct(ms)}  ${k}`),
  ];
}

async function main() {
  const dir = process.env["PROFILE_DIR"] ?? join(repo, "bench", ".bench", `profile-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const stops: (() => Promise<void>)[] = [];
  /** Each profile's process, by the pid in its file name. */
  const names = new Map<number, string>();
  /** Each started process's output so far (DEOPT: its deoptimisations during the load are counted). */
  const outputs = new Map<string, () => string>();
  let target: Target;
  let window: [number, number] | undefined;
  /** The services whose RPCs served are counted (their /metrics). */
  let services: string[] = [];
  if (TOPOLOGY === "stack") {
    const natsUrl = process.env["NATS_URL"] || "nats://127.0.0.1:4222";
    const stack = await startStack({ natsUrl, nodeArgs: profilerFlags(dir) });
    stops.push(() => stack.stop());
    for (const p of [stack.gateway, ...stack.keys, stack.ratelimit, stack.identity]) {
      names.set(p.child.pid!, p.name);
      outputs.set(p.name, p.output);
    }
    services = [...stack.keys, stack.ratelimit, stack.identity].map((p) => p.url);
    await fillTable(stack.call, stack.db.sql);
    target = await targetOn(stack.call, stack.gateway.url, stack.rootKey);
    target.processes = {
      gateway: treeOf(stack.gateway.child.pid),
      keys: treeOf(stack.keys[0]!.child.pid),
      ratelimit: treeOf(stack.ratelimit.child.pid),
      identity: treeOf(stack.identity.child.pid),
      nats: () => pidsMatching("nats-server"),
      postgres: postgresOf(stack.db.url.split("/").pop()!),
    };
  } else {
    const db = await createTestDatabase();
    const data = mkdtempSync(join(tmpdir(), "latchkey-profile-"));
    const rootKey = `lk_root_bench_${Date.now()}`;
    const proc = await startProcess(
      "latchkey",
      "apps/latchkey/src/start.ts",
      {
        DATABASE_URL: db.url,
        DATA_DIR: data,
        LATCHKEY_ROOT_KEY: rootKey,
        NATS_URL: "",
        CLICKHOUSE_URL: "",
        LOG_LEVEL: "warn",
      },
      undefined,
      profilerFlags(dir),
    );
    names.set(proc.child.pid!, proc.name);
    outputs.set(proc.name, proc.output);
    stops.push(async () => {
      await proc.stop();
      await db.drop();
      rmSync(data, { recursive: true, force: true });
    });
    const call = caller(proc.url, rootKey);
    await fillTable(call, db.sql);
    target = await targetOn(call, proc.url, rootKey);
    target.processes = { latchkey: treeOf(proc.child.pid), postgres: postgresOf(db.url.split("/").pop()!) };
  }
  try {
    await load(target, Number(process.env["WARMUP"] ?? 3));
    const before = await rpcCounts(services);
    const callsBefore = syscalls(target.processes!);
    const perfData = join(dir, "perf.data");
    const perf = PERF
      ? spawn(
          "perf",
          ["record", "-F", "999", "-e", "cpu-clock", "-a", "-o", perfData, "--", "sleep", String(DURATION)],
          {
            stdio: "ignore",
          },
        )
      : undefined;
    const outputFrom = new Map([...outputs].map(([name, out]) => [name, out().length]));
    const from = Number(process.hrtime.bigint() / 1000n);
    const figures = await load(target, DURATION);
    window = [from, Number(process.hrtime.bigint() / 1000n)];
    const after = await rpcCounts(services);
    const callsAfter = syscalls(target.processes!);
    const requests = figures.rps * DURATION;
    const calls = [...after]
      .map(([name, n]) => [name, n - (before.get(name) ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .map(([name, n]) => `  ${name}: ${n} calls, ${(requests / n).toFixed(1)} requests per call`);
    const perRequest = (n: number) => (n / requests).toFixed(2).padStart(8);
    const counts = Object.keys(callsAfter).map((name) => {
      const [a, b] = [callsAfter[name]!, callsBefore[name]!];
      return `| ${name.padEnd(10)} | ${perRequest(a.reads - b.reads)} | ${perRequest(a.writes - b.writes)} | ${perRequest(a.sleeps - b.sleeps)} | ${perRequest(a.preempted - b.preempted)} |`;
    });
    if (DEOPT) process.stdout.write(`${deopts(outputs, outputFrom).join("\n")}\n`);
    if (perf) {
      await new Promise((resolve) => perf.once("exit", resolve));
      process.stdout.write(`${perfShares(perfData, target.processes!).join("\n")}\n`);
    }
    process.stdout.write(
      `${TARGET} (${TOPOLOGY}): ${Math.round(figures.rps)} req/s, p99 ${figures.p99} ms\n${cpuTable([[TARGET, figures]]).join("\n")}\n${calls.join("\n")}\n` +
        `| per request |    reads |   writes |   sleeps | preempted |\n|------------|----------|----------|----------|-----------|\n${counts.join("\n")}\n`,
    );
  } finally {
    for (const stop of stops) await stop();
  }
  for (const file of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".cpuprofile")) continue;
    const pid = Number(/\.(\d+)\.\d+\.\d+\.cpuprofile$/.exec(file)?.[1]);
    process.stdout.write(
      `\n${names.get(pid) ?? "?"}: ${file}\n${summarise(join(dir, file), window).join("\n")}\n`,
    );
  }
}

function profilerFlags(dir: string): string[] {
  if (DEOPT) return ["--trace-deopt"];
  // --perf-basic-prof names JIT-compiled functions for perf; V8 also writes a log of its own, kept in `dir`.
  if (PERF) return ["--perf-basic-prof", `--logfile=${join(dir, "v8-%p.log")}`, "--no-logfile-per-isolate"];
  return PROFILING ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
}

/** Per process, the deoptimisations (--trace-deopt) printed since `from`, by function and reason. */
function deopts(outputs: Map<string, () => string>, from: Map<string, number>): string[] {
  const lines: string[] = [];
  for (const [name, out] of outputs) {
    const text = out().slice(from.get(name) ?? 0);
    const counts = new Map<string, number>();
    // "[bailout (kind: deopt-eager, reason: …): begin. deoptimizing 0x…, <JSFunction name (sfi = …)>, …"
    const re =
      /\[bailout \(kind: ([^,]+), reason: ([^)]*)\): begin\. deoptimizing \S+ <JSFunction ([^ >]*) ?\(sfi/g;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const what = `${m[3] || "(anonymous)"}: ${m[1]}, ${m[2]}`;
      counts.set(what, (counts.get(what) ?? 0) + 1);
    }
    lines.push(`${name}: ${[...counts.values()].reduce((a, b) => a + b, 0)} deoptimisations during the load`);
    for (const [what, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, TOP))
      lines.push(`  ${n}  ${what}`);
  }
  return lines;
}

/** What a sampled symbol is, for perfShares: the first pattern it matches names it. */
const KINDS: [string, RegExp][] = [
  ["kernel", /^\[k\]/],
  ["JavaScript", /\] (JS|RegExp):/],
  ["GC", /Scaveng|Heap|Marking|Sweep|Evacuat|RecordWrite|Allocat|GC/],
  ["strings", /String|Utf8|Json|Latin1|Flat|Hash/],
  ["promises", /Promise|Microtask|Generator|Async|Await/],
  ["properties", /IC|Property|Keyed|Lookup|Dictionary|Map/],
  ["malloc", /malloc|free|memset|memcpy|memmove|operator new|operator delete/],
];

/** Per process of `groups`, the share of its perf samples of each kind (KINDS, else "other"). */
function perfShares(data: string, groups: Record<string, () => number[]>): string[] {
  const report = execFileSync(
    "perf",
    ["report", "-i", data, "--no-children", "--sort", "pid,sym", "--stdio", "-g", "none"],
    { encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "ignore"] },
  );
  const byPid = new Map<number, Map<string, number>>();
  for (const line of report.split("\n")) {
    const m = /^\s*([\d.]+)%\s+(\d+):\S+\s+(.*)$/.exec(line);
    if (!m) continue;
    const kind = KINDS.find(([, rx]) => rx.test(m[3]!))?.[0] ?? "other";
    const shares = byPid.get(Number(m[2])) ?? new Map<string, number>();
    shares.set(kind, (shares.get(kind) ?? 0) + Number(m[1]));
    byPid.set(Number(m[2]), shares);
  }
  const kinds = [...KINDS.map(([k]) => k), "other"];
  const lines = [`| share of its samples | ${kinds.map((k) => k.padStart(10)).join(" | ")} |`];
  for (const [name, pids] of Object.entries(groups)) {
    const sum = new Map<string, number>();
    for (const pid of pids().flatMap((p) => [p, ...descendants(p)]))
      for (const [k, v] of byPid.get(pid) ?? []) sum.set(k, (sum.get(k) ?? 0) + v);
    const total = [...sum.values()].reduce((a, b) => a + b, 0);
    if (total === 0) continue;
    lines.push(
      `| ${name.padEnd(20)} | ${kinds.map((k) => `${((100 * (sum.get(k) ?? 0)) / total).toFixed(0)} %`.padStart(10)).join(" | ")} |`,
    );
  }
  return lines;
}

/** Each group's system calls and context switches so far, its processes' children counted. */
function syscalls(groups: Record<string, () => number[]>) {
  const out: Record<string, ReturnType<typeof syscallsOf>> = {};
  for (const [name, pids] of Object.entries(groups)) {
    const sum = { reads: 0, writes: 0, sleeps: 0, preempted: 0 };
    for (const pid of pids().flatMap((p) => [p, ...descendants(p)])) {
      const c = syscallsOf(pid);
      sum.reads += c.reads;
      sum.writes += c.writes;
      sum.sleeps += c.sleeps;
      sum.preempted += c.preempted;
    }
    out[name] = sum;
  }
  return out;
}

async function targetOn(call: ReturnType<typeof caller>, url: string, rootKey: string): Promise<Target> {
  const apiId = (await call("apis.createApi", { name: "profile" })).body.data.apiId;
  const body =
    TARGET === "unlimited"
      ? JSON.stringify({ key: (await call("keys.createKey", { apiId })).body.data.key })
      : (await seedFullVerification(call, apiId)).body;
  return {
    url: `${url}/v2/keys.verifyKey`,
    body,
    headers: { authorization: `Bearer ${rootKey}` },
    expect: '"code":"VALID"',
  };
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
