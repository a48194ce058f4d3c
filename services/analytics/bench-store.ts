// PostgresAnalyticsStore write bench: N verifications of one key (or N rate-limit checks of one identifier), their
// times spread over 1 s of ms, inserted in batches as BufferedIngest writes them (one call per batch, each with its
// batch id), into real PostgreSQL. Prints, per event: wall time and this process's CPU (medians of `rounds` rounds) and PostgreSQL's
// (its backends' CPU from /proc, in 10 ms ticks, so summed over the rounds; the server must run on this
// machine), into a scratch database that is dropped after.
//   npx tsx services/analytics/bench-store.ts [events=10000] [batch=1000] [rounds=5] [verifications|ratelimits]
// TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is the server.
import { readFileSync } from "node:fs";
import { migrate } from "@latchkey/runtime";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import { analyticsPostgresMigrations } from "./src/migrations.ts";
import type { RatelimitCheck, Verification } from "./src/store/analytics-store.ts";
import { PostgresAnalyticsStore } from "./src/store/postgres-analytics-store.ts";

const N = Number(process.argv[2] ?? 10_000);
const BATCH = Number(process.argv[3] ?? 1_000);
const ROUNDS = Number(process.argv[4] ?? 5);
const KIND = process.argv[5] === "ratelimits" ? "ratelimits" : "verifications";
const say = (line: string) => process.stdout.write(`${line}\n`);
/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

const db = await createTestDatabase();
try {
  await migrate(db.sql, "analytics", analyticsPostgresMigrations);
  const store = new PostgresAnalyticsStore(db.sql);
  /** CPU seconds of every backend serving the scratch database. */
  const serverCpu = async () => {
    const pids = await db.sql<{ pid: number }[]>`
      SELECT pid FROM pg_stat_activity WHERE datname = current_database()`;
    let total = 0;
    for (const { pid } of pids) {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
        total += (Number(fields[11]) + Number(fields[12])) / USER_HZ;
      } catch {
        // A backend that ended between the query and the read.
      }
    }
    return total;
  };

  const t0 = Date.UTC(2026, 10, 22, 9);
  let seq = 0;
  const results: { wall: number; node: number }[] = [];
  let server = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    const time = (i: number) => t0 + round * 1_000 + Math.floor((i * 1_000) / N);
    const requestId = () => `req_${round}_${seq++}_${Math.random().toString(36).slice(2, 12)}`;
    const verifications: Verification[] = Array.from(
      { length: KIND === "verifications" ? N : 0 },
      (_, i) => ({
        requestId: requestId(),
        time: time(i),
        workspaceId: "ws_bench",
        apiId: "api_bench",
        keyId: "key_bench",
        identityId: "",
        externalId: "",
        outcome: "VALID",
        tags: [],
        spentCredits: 1,
        latency: 0.4,
      }),
    );
    const checks: RatelimitCheck[] = Array.from({ length: KIND === "ratelimits" ? N : 0 }, (_, i) => ({
      requestId: requestId(),
      time: time(i),
      workspaceId: "ws_bench",
      namespaceId: "rlns_bench",
      identifier: "user_bench",
      passed: true,
      limit: 1_000_000,
      remaining: 1_000_000 - i,
      reset: t0 + 60_000,
      cost: 1,
      overrideId: "",
      latency: 0.1,
    }));
    // Every backend the pool may use is open before the clocks start.
    await Promise.all(Array.from({ length: 20 }, () => db.sql`SELECT 1`));
    const server0 = await serverCpu();
    const node0 = process.cpuUsage();
    const wall0 = performance.now();
    for (let i = 0; i < N; i += BATCH) {
      if (KIND === "verifications") {
        await store.insertVerifications(verifications.slice(i, i + BATCH), `bench:${round}:${i}`);
      } else await store.insertRatelimits(checks.slice(i, i + BATCH), `bench:${round}:${i}`);
    }
    const wall = performance.now() - wall0;
    const node = process.cpuUsage(node0);
    const serverRound = (await serverCpu()) - server0;
    // Round 0 warms up (JIT, plans, the pool) and is not counted.
    if (round > 0) {
      results.push({ wall: (wall * 1_000) / N, node: (node.user + node.system) / N });
      server += serverRound;
    }
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const [stored] = await db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n
    FROM ${db.sql(KIND === "verifications" ? "analytics_key_verifications_per_ms" : "analytics_ratelimits_per_ms")}`;
  const what = KIND === "verifications" ? "verifications of one key" : "rate-limit checks of one identifier";
  const one = KIND === "verifications" ? "verification" : "check";
  say(
    `${N} ${what} over 1 s in batches of ${BATCH}, median of ${ROUNDS}: ` +
      `${median(results.map((r) => r.wall)).toFixed(1)} us wall, ` +
      `${median(results.map((r) => r.node)).toFixed(1)} us node CPU, ` +
      `${((server * 1e6) / (N * ROUNDS)).toFixed(1)} us postgres CPU per ${one}; ` +
      `${stored?.n} rows for ${N * (ROUNDS + 1)} ${one}s`,
  );
} finally {
  await db.drop();
}
