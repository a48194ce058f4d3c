import { afterEach, describe, expect, it, vi } from "vitest";
import { storeFromEnv } from "./settings.ts";

afterEach(() => {
  vi.unstubAllEnvs();
});

const withEnv = (vars: Record<string, string>) => {
  for (const name of [
    "RATELIMIT_STORE",
    "RATELIMIT_PEERS",
    "REDIS_URL",
    "REDIS_MODE",
    "REDIS_SENTINEL_MASTER",
    "RATELIMIT_REDIS_PREFIX",
    "RATELIMIT_REDIS_TIMEOUT_MS",
    "RATELIMIT_ALLOW_UNSHARED_MEMORY",
  ])
    vi.stubEnv(name, vars[name] ?? "");
  return storeFromEnv;
};

describe("RATELIMIT_STORE and the Redis settings", () => {
  it("keep counters in memory when nothing is set", () => {
    expect(withEnv({})()).toEqual({ store: "memory", allowUnsharedMemory: false });
  });

  it("read RATELIMIT_ALLOW_UNSHARED_MEMORY with the memory store", () => {
    expect(withEnv({ RATELIMIT_ALLOW_UNSHARED_MEMORY: "true" })()).toEqual({
      store: "memory",
      allowUnsharedMemory: true,
    });
  });

  it("read Redis's URL, mode, prefix and timeout, with their defaults", () => {
    expect(withEnv({ RATELIMIT_STORE: "redis", REDIS_URL: "redis://cache:6379/2" })()).toEqual({
      store: "redis",
      redis: {
        urls: ["redis://cache:6379/2"],
        mode: "standalone",
        sentinelMaster: "mymaster",
        prefix: "latchkey:rl:",
        timeoutMs: 500,
      },
    });
    expect(
      withEnv({
        RATELIMIT_STORE: "redis",
        REDIS_URL: "redis://s1:26379, redis://s2:26379",
        REDIS_MODE: "sentinel",
        REDIS_SENTINEL_MASTER: "counters",
        RATELIMIT_REDIS_PREFIX: "lk:",
        RATELIMIT_REDIS_TIMEOUT_MS: "150",
      })(),
    ).toEqual({
      store: "redis",
      redis: {
        urls: ["redis://s1:26379", "redis://s2:26379"],
        mode: "sentinel",
        sentinelMaster: "counters",
        prefix: "lk:",
        timeoutMs: 150,
      },
    });
  });

  it.each([
    [{ RATELIMIT_STORE: "valkey" }, "RATELIMIT_STORE must be memory or redis, got 'valkey'"],
    [
      { RATELIMIT_ALLOW_UNSHARED_MEMORY: "yes" },
      "RATELIMIT_ALLOW_UNSHARED_MEMORY must be true or false, got 'yes'",
    ],
    [{ RATELIMIT_STORE: "redis" }, "REDIS_URL is required with RATELIMIT_STORE=redis"],
    [
      { RATELIMIT_STORE: "redis", REDIS_URL: "redis://a:6379", RATELIMIT_PEERS: "http://r0:7072" },
      "RATELIMIT_PEERS and RATELIMIT_STORE=redis exclude each other",
    ],
    [
      { RATELIMIT_STORE: "redis", REDIS_URL: "http://a:6379" },
      "REDIS_URL must be redis:// or rediss:// URLs, comma-separated",
    ],
    [
      { RATELIMIT_STORE: "redis", REDIS_URL: "redis://a:6379,redis://b:6379" },
      "REDIS_URL must be one URL with REDIS_MODE=standalone",
    ],
    [
      { RATELIMIT_STORE: "redis", REDIS_URL: "redis://a:6379", REDIS_MODE: "replica" },
      "REDIS_MODE must be standalone, sentinel or cluster, got 'replica'",
    ],
    [
      { RATELIMIT_STORE: "redis", REDIS_URL: "redis://a:6379", RATELIMIT_REDIS_TIMEOUT_MS: "0" },
      "RATELIMIT_REDIS_TIMEOUT_MS must be an integer of at least 1, got '0'",
    ],
  ])("refuse %o: %s", (vars, message) => {
    expect(withEnv(vars)).toThrow(message);
  });

  it("never repeat a password given in REDIS_URL when refusing it", () => {
    expect(withEnv({ RATELIMIT_STORE: "redis", REDIS_URL: "http://user:s3cret@a:6379" })).toThrow(
      /^((?!s3cret).)*$/,
    );
  });
});
