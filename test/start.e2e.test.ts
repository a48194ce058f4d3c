import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { listeningTcpPorts } from "@latchkey/latchkey/testing/postgres-wire";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, holdToContract, type Proc, startProcess } from "./testing/process-stack.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const dirs: string[] = [];
const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";

/** The embedded default: no DATABASE_URL, no NATS_URL, a fresh DATA_DIR. */
function embedded(extra: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-start-"));
  dirs.push(dataDir);
  return { DATA_DIR: dataDir, DATABASE_URL: "", NATS_URL: "", ...extra };
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function cli(env: Record<string, string>, ...args: string[]) {
  const { stdout } = await run(
    join(root, "node_modules/.bin/tsx"),
    [join(root, "apps/latchkey/src/cli.ts"), ...args],
    { env: { ...process.env, ...env } },
  );
  return stdout.trim().split("\n");
}

async function post(proc: Proc, operation: string, body: unknown, rootKey: string) {
  const res = await fetch(`${proc.url}/v2/${operation}`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = { status: res.status, body: (await res.json()) as any };
  holdToContract(operation, answer.status, answer.body);
  return answer;
}

const printedRootKey = (proc: Proc) => /Root key \(holds \*\): (\S+)/.exec(proc.output())?.[1];

/**
 * Starts Latchkey and waits for the end of its banner (the "Try:" line): it
 * answers /healthz a moment before the banner is written.
 */
async function start(env: Record<string, string>) {
  const proc = await startProcess("latchkey", "apps/latchkey/src/start.ts", env);
  const deadline = Date.now() + 10_000;
  while (!proc.output().includes("Try: curl") && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(proc.output()).toContain("Try: curl");
  return proc;
}

/** Verifications of the API counted in [start, end), per outcome, once at least `atLeast` are (30 s at most). */
async function counted(proc: Proc, rootKey: string, body: Record<string, unknown>, atLeast: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await post(proc, "analytics.getVerifications", { ...body, groupBy: "outcome" }, rootKey);
    expect(res.status).toBe(200);
    const counts: Record<string, number> = Object.fromEntries(
      res.body.data.map((b: { outcome: string; total: number }) => [b.outcome, b.total]),
    );
    const total = Object.values(counts).reduce((n, c) => n + c, 0);
    if (total >= atLeast || Date.now() > deadline) return counts;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The id `root-key list` shows for the root key whose name or listed start is `match`. */
async function rootKeyId(env: Record<string, string>, match: (line: string) => boolean) {
  const line = (await cli(env, "root-key", "list")).find(match);
  return /^(rk_\w+)/.exec(line ?? "")?.[1];
}

// Each test starts Latchkey (PGlite's WASM boot included) two or three times, and runs the CLI.
describe("npm start with no configuration", { timeout: 300_000 }, () => {
  it("serves on embedded storage, prints a root key once, shares it with the CLI and keeps data and analytics across restarts", async () => {
    const metricsPort = await freePort();
    const env = embedded({ METRICS_PORT: String(metricsPort) });
    const keptAt = join(env.DATA_DIR, "root-key");
    const begin = Date.now() - 1_000;
    let proc = await start(env);
    let key: string;
    let apiId: string;
    const rootKey = printedRootKey(proc)!;
    try {
      expect(rootKey).toMatch(/^lk_root_/);
      expect(readFileSync(keptAt, "utf8").trim()).toBe(rootKey);
      expect(statSync(keptAt).mode & 0o777).toBe(0o600);

      // The embedded database is a Unix socket only its owner can open: the TCP ports are the gateway's
      // and, on loopback, its metrics'.
      const ports = [Number(new URL(proc.url).port), metricsPort].sort((a, b) => a - b);
      expect(listeningTcpPorts(proc.child.pid!)).toEqual(ports);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
      expect((await fetch(`${proc.url}/metrics`)).status).toBe(404);
      // The API reference, beside the API: the document and the page that shows it.
      expect((await fetch(`${proc.url}/openapi.json`)).status).toBe(200);
      expect((await fetch(`${proc.url}/docs`)).headers.get("content-security-policy")).toContain(
        "default-src 'none'",
      );
      expect(statSync(env.DATA_DIR).mode & 0o777).toBe(0o700);
      expect(statSync(join(env.DATA_DIR, ".s.PGSQL.5432")).mode & 0o777).toBe(0o600);

      const api = await post(proc, "apis.createApi", { name: "embedded" }, rootKey);
      expect(api.status).toBe(200);
      apiId = api.body.data.apiId;
      const created = await post(proc, "keys.createKey", { apiId, credits: { remaining: 5 } }, rootKey);
      expect(created.status).toBe(200);
      key = created.body.data.key;
      expect((await post(proc, "keys.verifyKey", { key }, rootKey)).body.data).toMatchObject({
        valid: true,
        credits: 4,
      });

      // The CLI reaches the database the running process holds open, with no extra flags.
      const lines = await cli(env, "root-key", "create", "--permissions", "api.*.verify_key");
      const scoped = lines.at(-1)!;
      expect(scoped).toMatch(/^lk_root_/);
      expect((await post(proc, "keys.verifyKey", { key }, scoped)).body.data).toMatchObject({
        valid: true,
        credits: 3,
      });
      expect((await post(proc, "apis.createApi", { name: "nope-api" }, scoped)).status).toBe(403);
    } finally {
      await proc.stop();
    }

    proc = await start(env);
    try {
      // Shown once: a later start says where the key is kept, not the key.
      expect(printedRootKey(proc)).toBeUndefined();
      expect(proc.output()).not.toContain(rootKey);
      expect(proc.output()).toContain(keptAt);
      // The two verifications of the first process were written to its database (at the latest on shutdown).
      const range = { start: begin, end: Date.now() + 60_000, apiId, granularity: "hour" };
      expect(await counted(proc, rootKey, range, 2)).toEqual({ VALID: 2 });

      expect((await post(proc, "keys.verifyKey", { key }, rootKey)).body.data).toMatchObject({
        valid: true,
        credits: 2,
      });
      expect(await counted(proc, rootKey, range, 3)).toEqual({ VALID: 3 });

      // The kept bootstrap key, revoked through the CLI, stops working on this start at once...
      const id = await rootKeyId(env, (l) => l.includes(rootKey.slice(0, 12)));
      expect(id).toMatch(/^rk_/);
      await cli(env, "root-key", "revoke", id!);
      expect((await post(proc, "apis.listKeys", { apiId }, rootKey)).status).toBe(401);
    } finally {
      await proc.stop();
    }

    // ...and stays revoked on the next: the start says so, without the key, and serves on.
    proc = await start(env);
    try {
      expect(proc.output()).toMatch(/revoked/);
      expect(proc.output()).not.toContain(rootKey);
      expect((await post(proc, "apis.listKeys", { apiId }, rootKey)).status).toBe(401);
    } finally {
      await proc.stop();
    }
  });
});

describe("root-key revocations through the CLI while npm start runs", { timeout: 300_000 }, () => {
  // A minute-long root-key cache: an answer of 401 can only come from the revocation reaching the gateway.
  const cached = { ROOT_KEY_CACHE_TTL_MS: "60000" };

  it("stop the key on the very next request, and a revoked LATCHKEY_ROOT_KEY stays revoked across restarts", async () => {
    const bootstrap = `lk_root_test_${Math.random().toString(36).slice(2)}`;
    const env = embedded({ ...cached, LATCHKEY_ROOT_KEY: bootstrap });
    let proc = await start(env);
    try {
      // A key the operator gave is never printed.
      expect(proc.output()).not.toContain(bootstrap);
      const scoped = (await cli(env, "root-key", "create", "--permissions", "api.*.create_api")).at(-1)!;
      expect((await post(proc, "apis.createApi", { name: "before" }, scoped)).status).toBe(200);
      const scopedId = await rootKeyId(env, (l) => l.includes(scoped.slice(0, 12)));
      await cli(env, "root-key", "revoke", scopedId!);
      const after = await post(proc, "apis.createApi", { name: "after" }, scoped);
      expect(after.status).toBe(401);
      expect(after.body.error.type).toBe("https://unkey.com/docs/errors/unkey/authentication/key_not_found");

      expect((await post(proc, "apis.createApi", { name: "bootstrap" }, bootstrap)).status).toBe(200);
      const bootstrapId = await rootKeyId(env, (l) => l.includes(bootstrap.slice(0, 12)));
      expect(bootstrapId).toMatch(/^rk_/);
      await cli(env, "root-key", "revoke", bootstrapId!);
      expect((await post(proc, "apis.createApi", { name: "gone" }, bootstrap)).status).toBe(401);
    } finally {
      await proc.stop();
    }

    proc = await start(env);
    try {
      const said = proc.output();
      expect(said).toContain("LATCHKEY_ROOT_KEY");
      expect(said).toMatch(/revoked/);
      expect(said).toContain((await rootKeyId(env, (l) => l.includes(bootstrap.slice(0, 12))))!);
      expect(said).not.toContain(bootstrap);
      expect((await post(proc, "apis.createApi", { name: "still-gone" }, bootstrap)).status).toBe(401);
    } finally {
      await proc.stop();
    }
  });

  it("reach npm start over NATS when NATS_URL is set", async () => {
    const env = embedded({ ...cached, NATS_URL: natsUrl });
    const proc = await start(env);
    try {
      const rootKey = printedRootKey(proc)!;
      expect((await post(proc, "apis.createApi", { name: "nats" }, rootKey)).status).toBe(200);
      const id = await rootKeyId(env, (l) => l.includes(rootKey.slice(0, 12)));
      await cli(env, "root-key", "revoke", id!);
      expect((await post(proc, "apis.createApi", { name: "nats-gone" }, rootKey)).status).toBe(401);
    } finally {
      await proc.stop();
    }
  });
});

describe("npm start refuses a root-key cache TTL above its bound", { timeout: 300_000 }, () => {
  it("ROOT_KEY_CACHE_TTL_MS=600000 stops the start with a message naming it", async () => {
    const env = embedded({ ROOT_KEY_CACHE_TTL_MS: "600000" });
    await expect(start(env)).rejects.toThrow(/ROOT_KEY_CACHE_TTL_MS must be 0 to 60000 ms/);
  });
});
