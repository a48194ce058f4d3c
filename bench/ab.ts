import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { startStack } from "../test/testing/process-stack.ts";
import { type Call, type Figures, load, type Target } from "./load.ts";
import { postgresOf, treeOf } from "./procfs.ts";
import { fillTable } from "./seed.ts";
import { allInOneEntry, seedFullVerification, startAllInOne } from "./throughput.ts";

/**
 * `npm run bench:ab`: is B faster than A? Two Latchkeys run side by side, each
 * with its own environment (A and B, "NAME=value NAME=value"), and are loaded
 * in turn for SECONDS each, PAIRS times, the order alternating, so the
 * machine's drift (2x within minutes on the VMs this is built on, where a
 * ratio to a ceiling measured seconds earlier still moves by 15 %) falls on
 * both. Prints B/A per pair and their geometric mean: on such a machine about
 * 5 % is the smallest difference ten pairs resolve (an A/A run gives 0.98 to
 * 1.02). The npm run bench tables cannot show that: they measure each target
 * once per run.
 *
 * Settings (env): A, B; TARGET full (default: the full verification),
 * unlimited or limit; STACK=1 for the services as separate processes instead
 * of `npm start`; EMBEDDED=1 for `npm start` on PGlite instead of a
 * PostgreSQL test database; PAIRS (10); SECONDS (3); CONNECTIONS (64).
 * A_DIR and B_DIR: a side runs the code of that checkout instead of this one
 * (its dependencies installed; a copy of this tree with `cp -a` will do), so a
 * change of code is judged the same way as a change of settings.
 */
const PAIRS = Number(process.env["PAIRS"] ?? 10);
const SECONDS = Number(process.env["SECONDS"] ?? 3);
const TARGET = process.env["TARGET"] ?? "full";
const TARGETS = ["full", "unlimited", "limit"];

interface Side {
  target: Target;
  stop(): Promise<void>;
}

/** "NAME=value NAME=value" as an env record. */
function envOf(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of text.split(/\s+/).filter(Boolean)) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new Error(`A and B are NAME=value pairs separated by spaces, not '${pair}'`);
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

/** The body TARGET names, seeded through `call` (`full`: the full verification, when already seeded). */
async function bodyFor(call: Call, full?: string): Promise<{ operation: string; body: string }> {
  if (TARGET === "full" && full !== undefined) return { operation: "keys.verifyKey", body: full };
  const apiId = (await call("apis.createApi", { name: "bench" })).body.data.apiId;
  if (TARGET === "full")
    return { operation: "keys.verifyKey", body: (await seedFullVerification(call, apiId)).body };
  if (TARGET === "unlimited") {
    const key = (await call("keys.createKey", { apiId })).body.data.key;
    return { operation: "keys.verifyKey", body: JSON.stringify({ key }) };
  }
  if (TARGET === "limit") {
    const body = { namespace: "bench", identifier: "user_1", limit: 1e9, duration: 60_000 };
    await call("ratelimits.limit", body);
    return { operation: "ratelimits.limit", body: JSON.stringify(body) };
  }
  throw new Error(`TARGET: unknown ${TARGET}`);
}

/** A side's checkout (A_DIR or B_DIR), checked before anything starts. */
function checkoutOf(name: string): string | undefined {
  const dir = process.env[name];
  if (!dir) return undefined;
  const checkout = resolve(dir);
  if (!allInOneEntry(checkout) || !existsSync(join(checkout, "node_modules"))) {
    throw new Error(`${name}: ${checkout} is not a Latchkey checkout with its dependencies installed`);
  }
  return checkout;
}

async function start(text: string, checkout: string | undefined): Promise<Side> {
  const env = envOf(text);
  if (process.env["STACK"]) {
    const stack = await startStack({
      natsUrl: process.env["NATS_URL"] || "nats://127.0.0.1:4222",
      env: { gateway: env, keys: env, ratelimit: env },
      ...(checkout ? { checkout } : {}),
    });
    await fillTable(stack.call, stack.db.sql);
    const { operation, body } = await bodyFor(stack.call);
    return {
      target: {
        url: `${stack.gateway.url}/v2/${operation}`,
        body,
        headers: { authorization: `Bearer ${stack.rootKey}` },
        // Latchkey's own processes, and PostgreSQL's for this side's database (NATS is shared by both sides).
        processes: {
          latchkey: () =>
            [stack.gateway, ...stack.keys, stack.ratelimit, stack.identity].flatMap((p) =>
              treeOf(p.child.pid)(),
            ),
          postgres: postgresOf(stack.db.url.split("/").pop()!),
        },
      },
      stop: () => stack.stop(),
    };
  }
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-ab-"));
  let db: TestDatabase | undefined;
  if (!process.env["EMBEDDED"]) db = await createTestDatabase();
  const started = await startAllInOne(
    { DATA_DIR: dataDir, ...(db ? { DATABASE_URL: db.url } : {}), ...env },
    checkout,
  );
  await fillTable(started.call, db?.sql);
  const { operation, body } = await bodyFor(started.call, started.full.body);
  return {
    target: {
      url: `${started.proc.url}/v2/${operation}`,
      body,
      headers: started.auth,
      processes: {
        latchkey: treeOf(started.proc.child.pid),
        ...(db ? { postgres: postgresOf(db.url.split("/").pop()!) } : {}),
      },
    },
    async stop() {
      await started.proc.stop();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** CPU microseconds of Latchkey's processes per request served. */
const cpuPerRequest = (f: Figures) => f.cpu?.["latchkey"] ?? Number.NaN;
/**
 * The same with PostgreSQL's (the side's database's backends and the server's writers, which both
 * sides share: their CPU falls on both, as a background's does).
 */
const withPostgres = (f: Figures) => cpuPerRequest(f) + (f.cpu?.["postgres"] ?? 0);
const geomeanOf = (xs: number[]) => Math.exp(xs.reduce((sum, r) => sum + Math.log(r), 0) / xs.length);

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

async function main() {
  // Checked before anything starts, so a mistake leaves no Latchkey running.
  if (!TARGETS.includes(TARGET)) throw new Error(`TARGET: unknown ${TARGET}; use ${TARGETS.join(", ")}`);
  envOf(process.env["A"] ?? "");
  envOf(process.env["B"] ?? "");
  const dirA = checkoutOf("A_DIR");
  const dirB = checkoutOf("B_DIR");
  const a = await start(process.env["A"] ?? "", dirA);
  const b = await start(process.env["B"] ?? "", dirB).catch(async (err: unknown) => {
    await a.stop();
    throw err;
  });
  try {
    await load(a.target, 2);
    await load(b.target, 2);
    const ratios: number[] = [];
    // CPU per request moves far less than throughput when other work shares the machine.
    const cpuRatios: number[] = [];
    const allRatios: number[] = [];
    const cpuA: number[] = [];
    const cpuB: number[] = [];
    const rpsA: number[] = [];
    const rpsB: number[] = [];
    for (let i = 0; i < PAIRS; i++) {
      // The order alternates: whichever goes first in a pair is not always the same side.
      const [first, second] = i % 2 === 0 ? [a, b] : [b, a];
      const one = await load(first.target, SECONDS);
      const two = await load(second.target, SECONDS);
      const [fa, fb] = first === a ? [one, two] : [two, one];
      rpsA.push(fa.rps);
      rpsB.push(fb.rps);
      ratios.push(fb.rps / fa.rps);
      cpuRatios.push(cpuPerRequest(fb) / cpuPerRequest(fa));
      allRatios.push(withPostgres(fb) / withPostgres(fa));
      cpuA.push(withPostgres(fa));
      cpuB.push(withPostgres(fb));
      process.stderr.write(
        `  pair ${i + 1}: A ${Math.round(fa.rps)} req/s (p99 ${fa.p99} ms, ${Math.round(cpuPerRequest(fa))} µs CPU, PostgreSQL ${Math.round(fa.cpu?.["postgres"] ?? 0)}), B ${Math.round(fb.rps)} req/s (p99 ${fb.p99} ms, ${Math.round(cpuPerRequest(fb))} µs CPU, PostgreSQL ${Math.round(fb.cpu?.["postgres"] ?? 0)}), B/A ${(fb.rps / fa.rps).toFixed(2)}\n`,
      );
    }
    const geomean = geomeanOf(ratios);
    process.stdout.write(
      `${TARGET}${process.env["STACK"] ? " (separate processes)" : " (npm start)"}, A "${process.env["A"] ?? ""}"${dirA ? ` (${dirA})` : ""} vs B "${process.env["B"] ?? ""}"${dirB ? ` (${dirB})` : ""}, ${PAIRS} pairs of ${SECONDS} s\n` +
        `B/A: geometric mean ${geomean.toFixed(3)}, median ${median(ratios).toFixed(3)}, range ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}; median req/s A ${Math.round(median(rpsA))}, B ${Math.round(median(rpsB))}\n` +
        `CPU per request of Latchkey's processes, B/A: geometric mean ${geomeanOf(cpuRatios).toFixed(3)}, median ${median(cpuRatios).toFixed(3)}, range ${Math.min(...cpuRatios).toFixed(2)} to ${Math.max(...cpuRatios).toFixed(2)} (below 1: B spends less)\n` +
        `with PostgreSQL's, B/A: geometric mean ${geomeanOf(allRatios).toFixed(3)}, range ${Math.min(...allRatios).toFixed(2)} to ${Math.max(...allRatios).toFixed(2)}; median µs per request A ${Math.round(median(cpuA))}, B ${Math.round(median(cpuB))}\n`,
    );
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
