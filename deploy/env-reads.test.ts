import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { envReads } from "./env-reads.ts";

function sources(files: Record<string, string>): [string, string[]] {
  const root = mkdtempSync(join(tmpdir(), "latchkey-env-reads-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  return [root, Object.keys(files)];
}

describe("envReads", () => {
  it("finds env.string, env.int, env.bool, env.required and process.env reads, with their literal defaults", () => {
    const [root, files] = sources({
      "a.ts": `const log = env.string("LOG_LEVEL", "info");\nconst port = env.int("PORT", 7_071);\n`,
      "b.ts": `const db = env.required( 'DATABASE_URL' );\nconst n = env.string("NATS_URL");\n`,
      "c.ts": `const x = process.env["HOME_DIR"] ?? process.env.TMP_DIR;\nconst t = env.int("TTL_MS", fallback);\n`,
      "d.ts": `const relaxed = env.bool("ASYNC_FLAG", false);\nconst size = env.int("CACHE_SIZE", 100_000, 1);\n`,
    });
    const reads = envReads(root, files);
    expect([...reads.read].sort()).toEqual([
      "ASYNC_FLAG",
      "CACHE_SIZE",
      "DATABASE_URL",
      "HOME_DIR",
      "LOG_LEVEL",
      "NATS_URL",
      "PORT",
      "TMP_DIR",
      "TTL_MS",
    ]);
    expect([...reads.required]).toEqual(["DATABASE_URL"]);
    expect(Object.fromEntries([...reads.defaults].map(([k, v]) => [k, [...v]]))).toEqual({
      ASYNC_FLAG: ["false"],
      CACHE_SIZE: ["100000"],
      LOG_LEVEL: ["info"],
      PORT: ["7071"],
    });
  });

  it("adds what runService reads for the context a source names, and every context's URL for contextUrls()", () => {
    const [root] = sources({
      "main.ts": `await runService("analytics", {\n  settings: () => ({ url: env.required("CLICKHOUSE_URL") }),\n});\n`,
      "gateway.ts": `const urls = contextUrls();\n`,
      "contexts.ts": `export function contextUrls(): Record<ContextName, string> {}\n`,
    });
    const service = envReads(root, ["main.ts", "contexts.ts"]);
    expect([...service.read].sort()).toEqual(["CLICKHOUSE_URL", "NATS_URL", "PORT"]);
    expect([...service.required].sort()).toEqual(["CLICKHOUSE_URL", "NATS_URL"]);
    expect(Object.fromEntries([...service.defaults].map(([k, v]) => [k, [...v]]))).toEqual({
      PORT: ["7074"],
    });
    const gateway = envReads(root, ["gateway.ts"]);
    expect(Object.fromEntries([...gateway.defaults].map(([k, v]) => [k, [...v]]))).toEqual({
      KEYS_URL: ["http://127.0.0.1:7071"],
      RATELIMIT_URL: ["http://127.0.0.1:7072"],
      IDENTITY_URL: ["http://127.0.0.1:7073"],
      ANALYTICS_URL: ["http://127.0.0.1:7074"],
      WEBHOOKS_URL: ["http://127.0.0.1:7075"],
      PORTAL_URL: ["http://127.0.0.1:7076"],
    });
  });

  it("refuses runService of a name that is no context", () => {
    const [root, files] = sources({ "main.ts": `await runService("billing", {});\n` });
    expect(() => envReads(root, files)).toThrow(
      'main.ts: runService("billing") names no context of contexts.ts',
    );
  });

  it("ignores names that are not upper-case constants", () => {
    const [root, files] = sources({ "a.ts": `env.string(name);\nprocess.env[key];\nenv.string("lower");\n` });
    expect(envReads(root, files).read.size).toBe(0);
  });
});
