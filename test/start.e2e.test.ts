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

describe("pnpm start with no configuration", () => {
  it("serves on embedded storage, prints a root key, shares it with the CLI and keeps data across restarts", async () => {
    let proc = await startProcess("latchkey", "packages/latchkey/src/start.ts", env);
    let key: string;
    try {
      const rootKey = printedRootKey(proc);
      expect(rootKey).toMatch(/^lk_root_/);

      const api = await post(proc, "apis.createApi", { name: "embedded" }, rootKey!);
      expect(api.status).toBe(200);
      const created = await post(
        proc,
        "keys.createKey",
        { apiId: api.body.data.apiId, credits: { remaining: 5 } },
        rootKey!,
      );
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
      expect((await post(proc, "keys.verifyKey", { key }, rootKey)).body.data).toMatchObject({
        valid: true,
        credits: 2,
      });
    } finally {
      await proc.stop();
    }
  });
});
