import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { ownRedis } from "@latchkey/ratelimit/testing/redis";
import { internalTransport } from "@latchkey/runtime";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import { internalAuth, startProcess } from "../test/testing/process-stack.ts";

/**
 * The service as it is served, alone: the ratelimit process (RATELIMIT_ENTRY,
 * default src/main.ts) on a fresh database, called over the internal
 * transport by CONCURRENCY (2) loops sending batches of BATCH (22) items, like
 * the keys service (MODE=named, CheckNamedLimits, one limit per verification)
 * or the gateway (MODE=batch, LimitBatch, one identifier). Prints the
 * process's CPU µs per call and per item, from /proc, without the gateway,
 * keys and load generator that share the CPU in the probe. Run:
 *   node --import tsx bench/ratelimit-serve.ts
 * DURATION (5 s); PROFILE=1 writes the process's CPU profile to PROFILE_DIR (.bench);
 * STORE=redis counts in a redis-server of the run's own (its CPU printed too).
 */
const BATCH = Number(process.env["BATCH"] ?? 22);
const CONCURRENCY = Number(process.env["CONCURRENCY"] ?? 2);
const DURATION = Number(process.env["DURATION"] ?? 5);
const MODE = process.env["MODE"] ?? "named";
const ENTRY = process.env["RATELIMIT_ENTRY"] ?? "services/ratelimit/src/main.ts";

/** User plus system CPU time of a process, in clock ticks (10 ms). */
const ticks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
};
const sysTicks = (pid: number) =>
  Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[12]);

const db = await createTestDatabase();
const redis = process.env["STORE"] === "redis" ? await ownRedis() : undefined;
const flags = process.env["PROFILE"]
  ? ["--cpu-prof", `--cpu-prof-dir=${process.env["PROFILE_DIR"] ?? ".bench"}`]
  : [];
const served = await startProcess(
  "ratelimit",
  ENTRY,
  {
    DATABASE_URL: db.url,
    LOG_LEVEL: "warn",
    ...(redis ? { RATELIMIT_STORE: "redis", REDIS_URL: redis.url } : {}),
  },
  undefined,
  flags,
);
try {
  const client = createClient(RatelimitService, internalTransport(served.url, { auth: internalAuth }));
  const named = {
    groups: Array.from({ length: BATCH }, (_, i) => ({
      workspaceId: "ws_3kQpZ8mVtR2xYc",
      limits: [
        { owner: `key_7HkLm2NqPx${i % 3}`, name: "requests", limit: 1_000_000_000n, duration: 60_000n },
      ],
    })),
  };
  const caller = create(CallerSchema, {
    workspaceId: "ws_bench",
    rootKeyId: "rk_bench",
    permissions: ["ratelimit.*.limit", "ratelimit.*.create_namespace"],
  });
  const batch = {
    callers: [caller],
    items: Array.from({ length: BATCH }, (_, i) => ({
      callerIndex: 0,
      request: {
        requestId: `req_${i}`,
        check: { namespace: "bench", identifier: "user_1", limit: 1_000_000_000n, duration: 60_000n },
      },
    })),
  };
  const call = () => (MODE === "named" ? client.checkNamedLimits(named) : client.limitBatch(batch));
  // The first call creates the namespace.
  await call();
  const run = async (seconds: number) => {
    let calls = 0;
    const until = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) {
          await call();
          calls++;
        }
      }),
    );
    return calls;
  };
  await run(1);
  const redisPid = redis?.pid();
  const before = ticks(served.child.pid!);
  const sysBefore = sysTicks(served.child.pid!);
  const redisBefore = redisPid === undefined ? 0 : ticks(redisPid);
  const calls = await run(DURATION);
  const us = (ticks(served.child.pid!) - before) * 10_000;
  const sysUs = (sysTicks(served.child.pid!) - sysBefore) * 10_000;
  const redisUs = redisPid === undefined ? 0 : (ticks(redisPid) - redisBefore) * 10_000;
  process.stdout.write(
    `${MODE === "named" ? "CheckNamedLimits" : "LimitBatch"} of ${BATCH} served: ${Math.round(calls / DURATION)} calls/s,` +
      ` ${(us / calls).toFixed(0)} µs CPU per call, ${(us / calls / BATCH).toFixed(2)} per item (${(sysUs / calls).toFixed(0)} µs in the kernel)` +
      `${redisPid === undefined ? "" : `; Redis ${(redisUs / calls).toFixed(0)} µs per call`}\n`,
  );
} finally {
  await served.stop();
  await redis?.stop();
  await db.drop();
}
