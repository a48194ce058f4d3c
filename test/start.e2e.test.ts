import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { type Proc, startProcess } from "./harness.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const dataDir = mkdtempSync(join(tmpdir(), "latchkey-start-"));
// The embedded default: no DATABASE_URL, no NATS_URL.
const env = { DATA_DIR: dataDir, DATABASE_URL: "", NATS_URL: "" };

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function cli(...args: string[]) {
  const { stdout } = await run(
    join(root, "node_modules/.bin/tsx"),
    [join(root, "packages/latchkey/src/cli.ts"), ...args],
    {
      env: { ...process.env, ...env },
    },
  );
  return stdout.trim().split("\n");
}

async function post(proc: Proc, operation: string, body: unknown, rootKey: string) {
  const res = await fetch(`${proc.url}/v2/${operation}`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const printedRootKey = (proc: Proc) => /Root key \(holds \*\): (\S+)/.exec(proc.output())?.[1];

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

describe("pnpm start with no configuration", () => {
  it("serves on embedded storage, prints a root key, shares it with the CLI and keeps data and analytics across restarts", async () => {
    const start = Date.now() - 1_000;
    let proc = await startProcess("latchkey", "packages/latchkey/src/start.ts", env);
    let key: string;
    let apiId: string;
    try {
      const rootKey = printedRootKey(proc);
      expect(rootKey).toMatch(/^lk_root_/);

      const api = await post(proc, "apis.createApi", { name: "embedded" }, rootKey!);
      expect(api.status).toBe(200);
      apiId = api.body.data.apiId;
      const created = await post(proc, "keys.createKey", { apiId, credits: { remaining: 5 } }, rootKey!);
      expect(created.status).toBe(200);
      key = created.body.data.key;
      expect((await post(proc, "keys.verifyKey", { key }, rootKey!)).body.data).toMatchObject({
        valid: true,
        credits: 4,
      });

      // The CLI reaches the database the running process holds open, with no extra flags.
      const lines = await cli("root-key", "create", "--permissions", "api.*.verify_key");
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

    proc = await startProcess("latchkey", "packages/latchkey/src/start.ts", env);
    try {
      const rootKey = printedRootKey(proc)!;
      // The two verifications of the first process were written to its database (at the latest on shutdown).
      const range = { start, end: Date.now() + 60_000, apiId, granularity: "hour" };
      expect(await counted(proc, rootKey, range, 2)).toEqual({ VALID: 2 });

      expect((await post(proc, "keys.verifyKey", { key }, rootKey)).body.data).toMatchObject({
        valid: true,
        credits: 2,
      });
      expect(await counted(proc, rootKey, range, 3)).toEqual({ VALID: 3 });
    } finally {
      await proc.stop();
    }
  });
});
