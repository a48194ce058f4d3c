import { env } from "@latchkey/runtime";

/**
 * The bounds on counters held in memory (README "Memory and bounds"), read
 * from the environment; a value that is not an integer of at least 1 (bytes:
 * 1 MiB) stops the start. The defaults are those of limiter/sliding-windows.ts.
 */
export function counterBoundsFromEnv(): {
  maxCounters: number;
  maxCountersPerWorkspace: number;
  maxCounterBytes: number;
} {
  return {
    maxCounters: env.int("RATELIMIT_MAX_COUNTERS", 1_000_000, 1),
    maxCountersPerWorkspace: env.int("RATELIMIT_MAX_COUNTERS_PER_WORKSPACE", 250_000, 1),
    maxCounterBytes: env.int("RATELIMIT_MAX_COUNTER_BYTES", 335_544_320, 1_048_576),
  };
}

export type RedisMode = "standalone" | "sentinel" | "cluster";

/** Where counters live with RATELIMIT_STORE=redis (README "Counters in Redis"). */
export interface RedisSettings {
  /** One or more redis:// or rediss:// URLs: the server, the Sentinels, or some nodes of the Cluster. */
  urls: string[];
  mode: RedisMode;
  /** The name Sentinel knows the primary by. */
  sentinelMaster: string;
  prefix: string;
  /** How long a command may take before the check fails (UNAVAILABLE). */
  timeoutMs: number;
}

const MODES: readonly RedisMode[] = ["standalone", "sentinel", "cluster"];

/**
 * The store of counters: `memory` (this process, or the replica owning each
 * counter with RATELIMIT_PEERS) or `redis` with its settings. A bad or missing
 * value stops the start.
 */
export function storeFromEnv():
  | { store: "memory"; allowUnsharedMemory: boolean }
  | { store: "redis"; redis: RedisSettings } {
  const store = env.string("RATELIMIT_STORE", "memory");
  // Counting in memory, a process refuses to start beside another that does on its database (instances.ts).
  if (store === "memory")
    return { store, allowUnsharedMemory: env.bool("RATELIMIT_ALLOW_UNSHARED_MEMORY", false) };
  if (store !== "redis") throw new Error(`RATELIMIT_STORE must be memory or redis, got '${store}'`);
  if (env.string("RATELIMIT_PEERS") !== undefined)
    throw new Error(
      "RATELIMIT_PEERS and RATELIMIT_STORE=redis exclude each other: Redis already shares the counters",
    );
  const list = env.string("REDIS_URL");
  if (list === undefined) throw new Error("REDIS_URL is required with RATELIMIT_STORE=redis");
  const urls = list
    .split(",")
    .map((u) => u.trim())
    .filter(Boolean);
  for (const url of urls) {
    if (!/^rediss?:\/\//.test(url))
      throw new Error("REDIS_URL must be redis:// or rediss:// URLs, comma-separated");
  }
  const mode = env.string("REDIS_MODE", "standalone") as RedisMode;
  if (!MODES.includes(mode))
    throw new Error(`REDIS_MODE must be standalone, sentinel or cluster, got '${mode}'`);
  if (mode === "standalone" && urls.length !== 1)
    throw new Error("REDIS_URL must be one URL with REDIS_MODE=standalone");
  return {
    store,
    redis: {
      urls,
      mode,
      sentinelMaster: env.string("REDIS_SENTINEL_MASTER", "mymaster")!,
      prefix: env.string("RATELIMIT_REDIS_PREFIX", "latchkey:rl:")!,
      timeoutMs: env.int("RATELIMIT_REDIS_TIMEOUT_MS", 500, 1),
    },
  };
}
