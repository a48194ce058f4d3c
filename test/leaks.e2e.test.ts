import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWorkspace } from "@latchkey/keys";
import { receiver } from "@latchkey/webhooks/testing/webhook-receiver";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

/**
 * Leak reports end to end, each service its own process on PostgreSQL and NATS: a report signed
 * with a key pair the test makes (as GitHub signs), keys.reportLeak with no root key, the key
 * revoked or flagged in whichever workspace holds it, key.leaked delivered to a real receiver,
 * the audit record written.
 */
const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
const consumer = `leaks_e2e_${randomBytes(4).toString("hex")}`;
const identifier = createHash("sha256").update(randomBytes(8)).digest("hex");
const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });

let stack: Stack;
let hooks: Awaited<ReturnType<typeof receiver>>;
let owner: { workspaceId: string; rootKey: string };

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "latchkey-leaks-"));
  const keysFile = join(dir, "secret-scanning.json");
  writeFileSync(
    keysFile,
    JSON.stringify({
      public_keys: [
        {
          key_identifier: identifier,
          key: publicKey.export({ type: "spki", format: "pem" }),
          is_current: true,
        },
      ],
    }),
  );
  stack = await startStack({
    natsUrl,
    webhooks: { consumer },
    // auditLogs.list reads every context's records, the portal's too.
    portal: true,
    env: {
      keys: { SECRET_SCANNING_KEYS: keysFile, EXPIRING_NOTICE_INTERVAL_MS: "1000" },
      // So that each test reports as a client of its own (X-Forwarded-For).
      gateway: { TRUSTED_PROXIES: "127.0.0.1" },
      webhooks: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_POLL_MS: "50" },
    },
  });
  owner = await createWorkspace(stack.db.sql, `leaks-${randomBytes(4).toString("hex")}`);
  hooks = await receiver();
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  const nc = await connect({ servers: natsUrl });
  await (await jetstreamManager(nc)).consumers.delete("LATCHKEY_EVENTS", consumer).catch(() => {});
  await nc.close();
  await hooks?.close();
});

const call = async (operation: string, body: unknown) => {
  const res = await stack.call(operation, body, owner.rootKey);
  expect([operation, res.status]).toEqual([operation, 200]);
  return res.body.data;
};

/** POST to an open endpoint, with no root key. */
async function open(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.gateway.url}/v2/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

const githubReport = (
  body: string,
  signature = sign("sha256", Buffer.from(body), privateKey).toString("base64"),
) =>
  open("keys.receiveGithubLeaks", body, {
    "github-public-key-identifier": identifier,
    "github-public-key-signature": signature,
  });

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, withinMs = 30_000): Promise<T> {
  const end = Date.now() + withinMs;
  let value = await read();
  while (!done(value) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}

describe("leaked keys (separate processes, PostgreSQL, NATS, webhooks)", () => {
  it("revokes a key GitHub reports, answers in GitHub's shape, and refuses what GitHub did not sign", async () => {
    const hook = await call("webhooks.create", { url: `${hooks.url}`, events: ["key.leaked"] });
    const { apiId } = await call("apis.createApi", { name: "scanned", keyFormat: "checksum" });
    const { keyId, key } = await call("keys.createKey", { apiId, prefix: "acme" });
    expect(key).toMatch(/^acme_lkc_/);
    expect((await call("keys.verifyKey", { key })).code).toBe("VALID");

    const body = JSON.stringify([
      { token: key, type: "latchkey_api_key", url: "https://github.com/o/r/blob/1/.env", source: "content" },
      {
        token: `${key.slice(0, -1)}x`,
        type: "latchkey_api_key",
        url: "https://github.com/o/r",
        source: "content",
      },
    ]);
    // Unsigned, signed wrongly, and a real signature replayed over another body: 401, nothing done.
    expect((await open("keys.receiveGithubLeaks", body)).status).toBe(401);
    expect((await githubReport(body, Buffer.alloc(70, 1).toString("base64"))).status).toBe(401);
    const replayed = await githubReport(
      body,
      sign("sha256", Buffer.from("[]"), privateKey).toString("base64"),
    );
    expect(replayed.status).toBe(401);
    expect(replayed.body.error.status).toBe(401);
    expect((await call("keys.verifyKey", { key })).code).toBe("VALID");

    const answered = await githubReport(body);
    expect(answered.status).toBe(200);
    const sha = (t: string) => createHash("sha256").update(t).digest("hex");
    expect(answered.body).toEqual([
      { token_hash: sha(key), token_type: "latchkey_api_key", label: "true_positive" },
      { token_hash: sha(`${key.slice(0, -1)}x`), token_type: "latchkey_api_key", label: "false_positive" },
    ]);
    // Revoked at once on every instance: the cache was dropped through NATS.
    expect((await call("keys.verifyKey", { key })).code).toBe("DISABLED");
    // The same report again acts on nothing more.
    expect((await githubReport(body)).status).toBe(200);

    const delivered = await until(
      async () => hooks.received,
      (r) => r.length >= 1,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(hooks.received).toHaveLength(1);
    const event = new Webhook(hook.secret).verify(delivered[0]!.body, {
      "webhook-id": String(delivered[0]!.headers["webhook-id"]),
      "webhook-timestamp": String(delivered[0]!.headers["webhook-timestamp"]),
      "webhook-signature": String(delivered[0]!.headers["webhook-signature"]),
    }) as { type: string; data: unknown };
    expect(event).toMatchObject({
      type: "key.leaked",
      data: { keyId, apiId, source: "github", action: "revoked", url: "https://github.com/o/r/blob/1/.env" },
    });
    const audit = await call("auditLogs.list", { operation: "keys.githubLeakReport" });
    expect(audit).toEqual([
      expect.objectContaining({
        actor: { type: "system", id: "system" },
        operation: "keys.githubLeakReport",
        outcome: "success",
        resources: [
          { type: "key", id: keyId },
          { type: "api", id: apiId },
        ],
      }),
    ]);
  });

  it("takes keys.reportLeak from anyone, answers a key and a non-key alike, and flags as the API says", async () => {
    const { apiId } = await call("apis.createApi", { name: "flagged", leakPolicy: "flag" });
    const { key } = await call("keys.createKey", { apiId });
    const known = await open("keys.reportLeak", JSON.stringify({ key }));
    const unknown = await open("keys.reportLeak", JSON.stringify({ key: `${key}Q` }));
    expect([known.status, unknown.status]).toEqual([200, 200]);
    expect(Object.keys(known.body)).toEqual(["meta", "data"]);
    expect(known.body.data).toEqual({});
    expect(unknown.body.data).toEqual({});
    // Flagged, not revoked: it keeps verifying; the flag shows in the audit log.
    const audit = await until(
      () => call("auditLogs.list", { operation: "keys.reportLeak" }),
      (a: unknown[]) => a.length >= 1,
    );
    expect(audit).toEqual([
      expect.objectContaining({ fields: ["flagged"], actor: { type: "system", id: "system" } }),
    ]);
    expect((await call("keys.verifyKey", { key })).code).toBe("VALID");
    // Input to fix is a 400 in the contract's shape.
    const bad = await open("keys.reportLeak", JSON.stringify({ key: "" }));
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors[0].location).toBe("/body/key");
  });

  it("budgets each client's reports: past the tenth in a minute, 429 whatever the key", async () => {
    const from = (client: string, i: number) =>
      open("keys.reportLeak", JSON.stringify({ key: `sk_${i}nothing` }), { "x-forwarded-for": client });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await from("203.0.113.7", i)).status);
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);
    const refused = await from("203.0.113.7", 99);
    expect(refused.body.error).toMatchObject({ status: 429, title: "Too Many Requests" });
    // Another client is not held back by the first.
    expect((await from("198.51.100.4", 0)).status).toBe(200);
  });

  it("announces a key coming due to a real receiver once, from the keys process's job", async () => {
    const hooks2 = await receiver();
    try {
      const hook = await call("webhooks.create", { url: hooks2.url, events: ["key.expiring"] });
      const { apiId } = await call("apis.createApi", { name: "expiring", expiringNoticeDays: 3 });
      const expires = Date.now() + 2 * 86_400_000;
      const { keyId } = await call("keys.createKey", { apiId, expires });
      // Outside the notice period: never announced.
      await call("keys.createKey", { apiId, expires: Date.now() + 5 * 86_400_000 });
      const got = await until(
        async () => hooks2.received,
        (r) => r.length >= 1,
      );
      // Runs every second: a second notice of the same expiry would have arrived by now.
      await new Promise((r) => setTimeout(r, 2_500));
      expect(hooks2.received).toHaveLength(1);
      const event = new Webhook(hook.secret).verify(got[0]!.body, {
        "webhook-id": String(got[0]!.headers["webhook-id"]),
        "webhook-timestamp": String(got[0]!.headers["webhook-timestamp"]),
        "webhook-signature": String(got[0]!.headers["webhook-signature"]),
      }) as { type: string; data: unknown };
      expect(event).toEqual(
        expect.objectContaining({
          type: "key.expiring",
          data: { keyId, apiId, expiresAt: expires, days: 3 },
        }),
      );
    } finally {
      await hooks2.close();
    }
  });
});
