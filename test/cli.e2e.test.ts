import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
let stack: Stack;

beforeAll(async () => {
  // A long root-key cache: a revoked key answering 401 at once proves the revocation reached the gateway.
  stack = await startStack({ natsUrl, env: { gateway: { ROOT_KEY_CACHE_TTL_MS: "30000" } } });
});
afterAll(async () => {
  await stack?.stop();
});

async function cli(...args: string[]) {
  const { stdout } = await run(
    join(root, "node_modules/.bin/tsx"),
    [join(root, "apps/latchkey/src/cli.ts"), ...args],
    {
      env: { ...process.env, DATABASE_URL: stack.db.url, NATS_URL: natsUrl },
    },
  );
  return stdout.trim().split("\n");
}

describe("npm run latchkey -- against DATABASE_URL and NATS_URL", () => {
  it("creates a workspace whose root key sees nothing of the default workspace", async () => {
    const apiId = (await stack.call("apis.createApi", { name: "default-api" })).body.data.apiId;
    const lines = await cli("workspace", "create", "acme");
    expect(lines[0]).toMatch(/^workspace ws_\w+ \(acme\)$/);
    const acmeKey = lines.at(-1)!;
    expect(acmeKey).toMatch(/^lk_root_/);

    const read = await stack.call("apis.getApi", { apiId }, acmeKey);
    expect(read.status).toBe(404);
    expect(read.body.error.type).toBe("https://unkey.com/docs/errors/unkey/data/api_not_found");
    expect((await stack.call("apis.createApi", { name: "acme-api" }, acmeKey)).status).toBe(200);
  });

  it("creates least-privilege root keys, lists them without the secret, and revokes them on every gateway at once", async () => {
    const created = await cli(
      "root-key",
      "create",
      "--workspace",
      "ws_default",
      "--permissions",
      "api.*.read_api",
    );
    const key = created.at(-1)!;
    const id = /root key (rk_\w+)/.exec(created.join("\n"))![1]!;

    const apiId = (await stack.call("apis.createApi", { name: "listed-api" })).body.data.apiId;
    expect((await stack.call("apis.getApi", { apiId }, key)).status).toBe(200);
    const denied = await stack.call("apis.createApi", { name: "denied-api" }, key);
    expect(denied.status).toBe(403);
    expect(denied.body.error.type).toBe(
      "https://unkey.com/docs/errors/unkey/authorization/insufficient_permissions",
    );

    const listed = (await cli("root-key", "list")).join("\n");
    expect(listed).toContain(id);
    expect(listed).not.toContain(key);

    expect((await cli("root-key", "revoke", id)).at(-1)).toBe(`root key ${id} revoked`);
    // The gateway had it cached for 30 s: the revocation, announced on NATS, dropped it.
    expect((await stack.call("apis.getApi", { apiId }, key)).status).toBe(401);
  });

  it("applies a due daily refill once per period with credits refill --at, seen by the next verification", async () => {
    const apiId = (await stack.call("apis.createApi", { name: "refill-api" })).body.data.apiId;
    const credits = { remaining: 3, refill: { interval: "daily", amount: 50 } };
    const { key } = (await stack.call("keys.createKey", { apiId, credits })).body.data;
    expect((await stack.call("keys.verifyKey", { key })).body.data.credits).toBe(2);

    const nextMidnight = Math.ceil((Date.now() + 1) / 86_400_000) * 86_400_000;
    expect((await cli("credits", "refill", "--at", String(nextMidnight + 1))).at(-1)).toMatch(
      /^refilled 1 key due/,
    );
    expect((await stack.call("keys.verifyKey", { key })).body.data.credits).toBe(49);
    // The same period again: nothing more to refill.
    expect((await cli("credits", "refill", "--at", String(nextMidnight + 60_000))).at(-1)).toMatch(
      /^refilled 0 keys/,
    );
    expect((await stack.call("keys.verifyKey", { key })).body.data.credits).toBe(48);
  });

  it("refuses a permission that is not a root-key permission, naming it", async () => {
    await expect(cli("root-key", "create", "--permissions", "api.*.fly")).rejects.toMatchObject({
      stderr: expect.stringContaining("unknown action 'fly'"),
    });
  });
});
