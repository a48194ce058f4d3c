import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import { DURATION, type Figures, load, RUNS, type Target, WARMUP } from "./load.ts";
import { cpuOf, pidsMatching, treeOf } from "./procfs.ts";
import { fillTable } from "./seed.ts";
import { startAllInOne } from "./throughput.ts";

/** Distinct bogus root keys per second that the other client sends (FLOOD_RATE). */
const FLOOD_RATE = Number(process.env["FLOOD_RATE"] ?? 10_000);
/** Another checkout to run `npm start` from (CHECKOUT; its dependencies installed), e.g. a copy from before a change. */
const CHECKOUT = process.env["CHECKOUT"] || undefined;

interface FloodStats {
  sent: number;
  /** Requests not sent because their connection had too many unanswered. */
  skipped: number;
  seconds: number;
  statuses: Record<string, number>;
}

/** Starts the flooding client (authflood-client.ts) against `url`, once it floods; stop() ends it and answers what it sent. */
async function flood(url: string, mode: "distinct" | "same") {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "authflood-client.ts")],
    {
      env: { ...process.env, URL: url, RATE: String(FLOOD_RATE), FLOOD: mode },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("flooding\n")) resolve();
    });
    child.once("exit", (code) =>
      reject(new Error(`the flooding client exited with ${code} before it started`)),
    );
  });
  return {
    pid: child.pid,
    stop: () =>
      new Promise<FloodStats>((resolve) => {
        child.once("exit", () => {
          try {
            resolve(JSON.parse(out.trim().split("\n").at(-1) ?? "") as FloodStats);
          } catch {
            resolve({ sent: 0, skipped: 0, seconds: 1, statuses: {} });
          }
        });
        child.kill("SIGTERM");
      }),
  };
}

const rateOf = (s: FloodStats) => Math.round(s.sent / Math.max(1, s.seconds));

/**
 * `npm run bench` (BENCH=authflood): the full verification through one `npm start` (PostgreSQL)
 * with a valid, cached root key, measured alone and while another process sends FLOOD_RATE
 * keys.verifyKey requests per second, each with a new bogus root key of a real one's shape (every
 * one a lookup the gateway must make), RUNS pairs in alternating order; and, as the control that
 * shows what the flood's requests cost by themselves, the same rate with one repeated bogus key
 * (remembered as unknown, no lookups). Prints each pair and the geometric mean of flooded/alone.
 * CHECKOUT runs `npm start` from another checkout, to compare with the code before a change.
 */
export async function authflood(): Promise<void> {
  const db = await createTestDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-authflood-"));
  const started = await startAllInOne({ DATABASE_URL: db.url, DATA_DIR: dataDir }, CHECKOUT);
  try {
    await fillTable(started.call, db.sql);
    const url = `${started.proc.url}/v2/keys.verifyKey`;
    const target: Target = {
      url,
      body: started.full.body,
      headers: started.auth,
      expect: '"code":"VALID"',
      processes: { latchkey: treeOf(started.proc.child.pid), postgres: () => pidsMatching("postgres") },
    };
    process.stderr.write(`authflood (${FLOOD_RATE} bogus root keys/s beside 64 connections verifying)\n`);
    await load(target, WARMUP);
    const under = async (mode: "distinct" | "same"): Promise<[Figures, FloodStats]> => {
      const f = await flood(url, mode);
      // Let the flood reach its rate before measuring.
      await new Promise((r) => setTimeout(r, 1_000));
      const figures = await load(target, DURATION);
      return [figures, await f.stop()];
    };
    const rows: string[] = [];
    const ratios: number[] = [];
    const controls: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      // The order rotates so the machine's drift falls on every kind of run.
      const runs: Record<string, () => Promise<[Figures, FloodStats | undefined]>> = {
        alone: async () => [await load(target, DURATION), undefined],
        distinct: () => under("distinct"),
        same: () => under("same"),
      };
      const order = ["alone", "distinct", "same"].map((_, k, all) => all[(k + i) % all.length]!);
      const got: Record<string, [Figures, FloodStats | undefined]> = {};
      for (const name of order) got[name] = await runs[name]!();
      const [alone] = got["alone"]!;
      const [distinct, distinctStats] = got["distinct"]!;
      const [same, sameStats] = got["same"]!;
      ratios.push(distinct.rps / alone.rps);
      controls.push(same.rps / alone.rps);
      rows.push(
        `| ${i + 1} | ${Math.round(alone.rps)} | ${Math.round(distinct.rps)} | ${(distinct.rps / alone.rps).toFixed(2)} | ${rateOf(distinctStats!)} ${JSON.stringify(distinctStats!.statuses)}${distinctStats!.skipped > 0 ? ` (${distinctStats!.skipped} not sent)` : ""} | ${Math.round(same.rps)} | ${(same.rps / alone.rps).toFixed(2)} | ${rateOf(sameStats!)} | ${alone.non2xx + distinct.non2xx + same.non2xx} |`,
      );
      process.stderr.write(`  pair ${i + 1}: ${rows.at(-1)}\n`);
    }
    // What one request of each kind costs the server, measured apart: the flood alone, then verifications alone.
    const perRequest: string[] = [];
    const groups = target.processes!;
    for (const mode of ["distinct", "same"] as const) {
      const f = await flood(url, mode);
      const before = cpuOf(groups);
      await new Promise((r) => setTimeout(r, DURATION * 1_000));
      const after = cpuOf(groups);
      const stats = await f.stop();
      const answered = Object.values(stats.statuses).reduce((a, b) => a + b, 0);
      perRequest.push(
        `${mode === "distinct" ? "a distinct bogus root key" : "one repeated bogus root key"}: ${Object.keys(
          groups,
        )
          .map((g) => `${g} ${((after[g]! - before[g]!) / Math.max(1, answered)).toFixed(1)} µs`)
          .join(", ")} (${answered} answered)`,
      );
    }
    const quiet = await load(target, DURATION);
    perRequest.push(
      `a verification: ${Object.entries(quiet.cpu ?? {})
        .map(([g, v]) => `${g} ${v.toFixed(1)} µs`)
        .join(", ")}`,
    );
    const geomean = (xs: number[]) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
    process.stdout.write(
      [
        "",
        "| run | alone req/s | distinct bogus keys: req/s | ratio | flood sent/s and its statuses | one repeated bogus key: req/s | ratio | flood sent/s | verify errors |",
        "|-----|-------------|----------------------------|-------|-------------------------------|-------------------------------|-------|--------------|---------------|",
        ...rows,
        "",
        `verification throughput under ${FLOOD_RATE} distinct bogus root keys/s: ${geomean(ratios).toFixed(2)} of alone (geometric mean of ${RUNS}); under the same rate of one repeated bogus key: ${geomean(controls).toFixed(2)}`,
        "",
        "CPU per request, each kind measured alone:",
        ...perRequest.map((line) => `- ${line}`),
        "",
      ].join("\n"),
    );
  } finally {
    await started.proc.stop();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
