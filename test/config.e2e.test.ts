import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONTEXTS, GATEWAY_PROCESS } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, internalSecret } from "./testing/process-stack.ts";

const root = join(import.meta.dirname, "..");

/** Runs a service's entrypoint until it exits (a misconfigured one must not get as far as serving). */
function runService(entry: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", join(root, entry)],
      {
        env: {
          ...process.env,
          LOG_LEVEL: "info",
          PORT: "0",
          LATCHKEY_INTERNAL_SECRET: internalSecret,
          ...env,
        },
        timeout: 30_000,
      },
      (_err, stdout, stderr) => resolve({ code: child.exitCode, output: `${stdout}${stderr}` }),
    );
  });
}

describe("a service with a bad setting stops at start, before it connects or migrates", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const tables = async () =>
    (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)[0]!
      .n;

  it.each([
    ["RATELIMIT_FAIL_OPEN", "yes", "RATELIMIT_FAIL_OPEN must be true or false, got 'yes'"],
    ["CREDITS_ASYNC_COMMIT", "1", "CREDITS_ASYNC_COMMIT must be true or false, got '1'"],
    ["CREDITS_LOW_FRACTION", "1.5", "CREDITS_LOW_FRACTION must be a number from 0 to 1, got '1.5'"],
    ["KEY_CACHE_SIZE", "lots", "KEY_CACHE_SIZE must be an integer, got 'lots'"],
    ["KEY_CACHE_SIZE", "0", "KEY_CACHE_SIZE must be an integer of at least 1, got '0'"],
    ["LATCHKEY_ENCRYPTION_KEY", "c2hvcnQ=", "LATCHKEY_ENCRYPTION_KEY must be the base64 of 32 random bytes"],
  ])("keys: %s=%s exits 1, says what to fix and leaves the database empty", async (name, value, says) => {
    const { code, output } = await runService("services/keys/src/main.ts", {
      DATABASE_URL: db.url,
      NATS_URL: "",
      [name]: value,
    });
    expect(code).toBe(1);
    expect(output).toContain(says);
    expect(await tables()).toBe(0);
  });

  const entries: Record<string, string> = {
    gateway: GATEWAY_PROCESS.entry,
    ...Object.fromEntries(Object.values(CONTEXTS).map((c) => [c.name, c.entry])),
  };
  const unreachable = {
    DATABASE_URL: "",
    CLICKHOUSE_URL: "http://127.0.0.1:1/latchkey",
    NATS_URL: "nats://127.0.0.1:1",
  };

  it.each(Object.keys(entries))(
    "%s: without LATCHKEY_INTERNAL_SECRET, or with one too short, exits 1 saying what it is, before it connects",
    async (name) => {
      const entry = entries[name]!;
      const missing = await runService(entry, {
        ...unreachable,
        DATABASE_URL: db.url,
        LATCHKEY_INTERNAL_SECRET: "",
      });
      expect(missing.code).toBe(1);
      expect(missing.output).toContain(
        "LATCHKEY_INTERNAL_SECRET is required: the secret shared by the gateway",
      );
      const short = await runService(entry, {
        ...unreachable,
        DATABASE_URL: db.url,
        LATCHKEY_INTERNAL_SECRET: "too-short-to-sign-anything",
      });
      expect(short.code).toBe(1);
      expect(short.output).toContain("secret 1 has 26 characters, fewer than 32");
      expect(short.output).not.toContain("too-short-to-sign-anything");
      expect(await tables()).toBe(0);
    },
  );

  it.each([
    ["gateway", "not a url"],
    ["gateway", "ftp://keys.example.com"],
    ["gateway", "https://keys.example.com/?x=1"],
  ])("%s: PUBLIC_URL=%s exits 1 naming it, before it connects", async (name, value) => {
    const { code, output } = await runService(entries[name]!, {
      ...unreachable,
      DATABASE_URL: db.url,
      PUBLIC_URL: value,
    });
    expect(code).toBe(1);
    expect(output).toContain("PUBLIC_URL must be");
  });

  it.each([
    ["gateway", "RPC_TIMEOUT_MS"],
    ["gateway", "ANALYTICS_RPC_TIMEOUT_MS"],
    ["keys", "RPC_TIMEOUT_MS"],
    ["ratelimit", "RPC_TIMEOUT_MS"],
  ])("%s: %s=0 exits 1 saying it must be at least 1", async (name, variable) => {
    const entry = entries[name]!;
    const { code, output } = await runService(entry, {
      ...unreachable,
      DATABASE_URL: db.url,
      [variable]: "0",
    });
    expect(code).toBe(1);
    expect(output).toContain(`${variable} must be an integer of at least 1, got '0'`);
    expect(await tables()).toBe(0);
  });

  it("ratelimit: RATELIMIT_PEERS without RATELIMIT_SELF exits 1 and leaves the database empty", async () => {
    const { code, output } = await runService("services/ratelimit/src/main.ts", {
      DATABASE_URL: db.url,
      NATS_URL: "",
      RATELIMIT_PEERS: "http://10.0.0.1:7072,http://10.0.0.2:7072",
      RATELIMIT_SELF: "",
    });
    expect(code).toBe(1);
    expect(output).toContain("RATELIMIT_SELF is required");
    expect(await tables()).toBe(0);
  });

  it("ratelimit: RATELIMIT_STORE=redis without REDIS_URL exits 1 and leaves the database empty", async () => {
    const { code, output } = await runService("services/ratelimit/src/main.ts", {
      DATABASE_URL: db.url,
      NATS_URL: "",
      RATELIMIT_STORE: "redis",
      REDIS_URL: "",
    });
    expect(code).toBe(1);
    expect(output).toContain("REDIS_URL is required with RATELIMIT_STORE=redis");
    expect(await tables()).toBe(0);
  });

  it("ratelimit: RATELIMIT_MAX_COUNTERS_PER_WORKSPACE=0 exits 1, says what to fix and leaves the database empty", async () => {
    const { code, output } = await runService("services/ratelimit/src/main.ts", {
      DATABASE_URL: db.url,
      NATS_URL: "",
      RATELIMIT_MAX_COUNTERS_PER_WORKSPACE: "0",
    });
    expect(code).toBe(1);
    expect(output).toContain(
      "RATELIMIT_MAX_COUNTERS_PER_WORKSPACE must be an integer of at least 1, got '0'",
    );
    expect(await tables()).toBe(0);
  });

  it("analytics: ANALYTICS_START_AT other than all or new exits 1 before it reaches ClickHouse", async () => {
    // Nothing listens on port 1: had it tried to connect first, the error would be about ClickHouse.
    const { code, output } = await runService("services/analytics/src/main.ts", {
      CLICKHOUSE_URL: "http://127.0.0.1:1/latchkey",
      NATS_URL: "nats://127.0.0.1:1",
      ANALYTICS_START_AT: "newest",
    });
    expect(code).toBe(1);
    expect(output).toContain("ANALYTICS_START_AT must be all or new, got 'newest'");
  });

  it.each([
    ["KEY_CACHE_SIZE", "0", "KEY_CACHE_SIZE must be an integer of at least 1, got '0'"],
    ["CREDITS_ASYNC_COMMIT", "1", "CREDITS_ASYNC_COMMIT must be true or false, got '1'"],
    ["CREDITS_LOW_FRACTION", "1.5", "CREDITS_LOW_FRACTION must be a number from 0 to 1, got '1.5'"],
    ["PORT", "http", "PORT must be an integer, got 'http'"],
    ["RATELIMIT_MAX_COUNTERS", "lots", "RATELIMIT_MAX_COUNTERS must be an integer, got 'lots'"],
  ])(
    "npm start: %s=%s exits 1, says what to fix and leaves the database empty",
    async (name, value, says) => {
      const dataDir = mkdtempSync(join(tmpdir(), "latchkey-config-"));
      try {
        const { code, output } = await runService("apps/latchkey/src/start.ts", {
          DATABASE_URL: db.url,
          DATA_DIR: dataDir,
          NATS_URL: "",
          CLICKHOUSE_URL: "",
          [name]: value,
        });
        expect(code).toBe(1);
        expect(output).toContain(says);
        expect(await tables()).toBe(0);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it("keys with good settings still migrates and serves (the same database, so the checks above could see tables)", async () => {
    const port = await freePort();
    const child = execFile(process.execPath, ["--import", "tsx", join(root, "services/keys/src/main.ts")], {
      env: {
        ...process.env,
        LOG_LEVEL: "warn",
        PORT: String(port),
        DATABASE_URL: db.url,
        NATS_URL: "",
        LATCHKEY_INTERNAL_SECRET: internalSecret,
      },
    });
    try {
      const ready = async () =>
        fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
      const deadline = Date.now() + 20_000;
      while ((await ready()) !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await ready()).toBe(200);
      expect(await tables()).toBeGreaterThan(0);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
