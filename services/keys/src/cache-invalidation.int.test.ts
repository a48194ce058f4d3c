import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { CreditsOperation, KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, hashKey, migrate, NatsBus } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf } from "../testing/in-memory-keys.ts";
import { keysDepsOverDatabase } from "../testing/keys-deps.ts";
import type { KeysDeps } from "./deps.ts";
import { keyChanged } from "./events.ts";
import { keysMigrations } from "./migrations.ts";
import { keysRoutes } from "./routes.ts";

// Two instances, one database, caches kept fresh through real NATS.

const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const log = createLogger("keys", "silent");
const caller = callerOf("ws_default", "*");
let db: TestDatabase;
const buses: NatsBus[] = [];
const instances: { deps: KeysDeps; client: Client<typeof KeysService>; bus: NatsBus }[] = [];

async function instance() {
  const bus = await NatsBus.connect(natsUrl, log, "keys-test");
  buses.push(bus);
  const deps = keysDepsOverDatabase(db.sql, bus, log);
  const entry = { deps, bus, client: createClient(KeysService, createRouterTransport(keysRoutes(deps))) };
  instances.push(entry);
  return entry;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
});
afterAll(async () => {
  for (const i of instances) i.deps.close();
  for (const b of buses) await b.close();
  await db?.drop();
});

describe("key cache across instances", () => {
  it("sees a change made on another instance at the next verification", async () => {
    const a = await instance();
    const b = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "propagation" });
    const { keyId, key } = await a.client.createKey({ caller, apiId });
    expect((await a.client.verifyKey({ caller, key })).code).toBe(VerifyCode.VALID);

    // Instance b changes the key and announces it, as updateKey does.
    await db.sql`UPDATE keys SET enabled = false WHERE id = ${keyId}`;
    const [row] = await db.sql<{ hash: string }[]>`SELECT hash FROM keys WHERE id = ${keyId}`;
    keyChanged(b.deps, { workspaceId: "ws_default", hash: row!.hash, keyId, apiId });
    await b.bus.nc.flush();
    // A round trip on a's connection returns after the server has delivered what came before it.
    await a.bus.nc.flush();

    expect((await a.client.verifyKey({ caller, key })).code).toBe(VerifyCode.DISABLED);
  });
});

describe("every change reaches the other instance's next verification", () => {
  async function pair() {
    const a = await instance();
    const b = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "propagation" });
    /** b announced something: wait until a has received everything sent before now. */
    const settle = async () => {
      await b.bus.nc.flush();
      await a.bus.nc.flush();
    };
    return { a, b, apiId, settle };
  }

  it("updateKey, updateCredits, deleteKey and rerollKey on b are seen by a's cache", async () => {
    const { a, b, apiId, settle } = await pair();
    const k = await a.client.createKey({ caller, apiId });
    expect((await a.client.verifyKey({ caller, key: k.key })).code).toBe(VerifyCode.VALID);

    await b.client.updateKey({ caller, keyId: k.keyId, enabled: false });
    await settle();
    expect((await a.client.verifyKey({ caller, key: k.key })).code).toBe(VerifyCode.DISABLED);

    await b.client.updateKey({ caller, keyId: k.keyId, enabled: true });
    await b.client.updateCredits({ caller, keyId: k.keyId, operation: CreditsOperation.SET, value: 0n });
    await settle();
    expect((await a.client.verifyKey({ caller, key: k.key })).code).toBe(VerifyCode.USAGE_EXCEEDED);

    const rerolled = await b.client.rerollKey({ caller, keyId: k.keyId, expiration: 0n });
    await settle();
    expect((await a.client.verifyKey({ caller, key: k.key })).code).toBe(VerifyCode.EXPIRED);
    expect((await a.client.verifyKey({ caller, key: rerolled.key, cost: 0n })).code).toBe(VerifyCode.VALID);

    await b.client.deleteKey({ caller, keyId: rerolled.keyId });
    await settle();
    expect((await a.client.verifyKey({ caller, key: rerolled.key })).code).toBe(VerifyCode.NOT_FOUND);
  });

  it("deleteApi on b makes a answer NOT_FOUND for the API's keys", async () => {
    const { a, b, apiId, settle } = await pair();
    const k = await a.client.createKey({ caller, apiId });
    expect((await a.client.verifyKey({ caller, key: k.key })).code).toBe(VerifyCode.VALID);
    await b.client.deleteApi({ caller, apiId });
    await settle();
    expect((await a.client.verifyKey({ caller, key: k.key })).code).toBe(VerifyCode.NOT_FOUND);
  });

  it("a key imported on b verifies on a, which had cached it as missing", async () => {
    const { a, b, apiId, settle } = await pair();
    const plaintext = `legacy_${Math.random().toString(36).slice(2)}`;
    expect((await a.client.verifyKey({ caller, key: plaintext })).code).toBe(VerifyCode.NOT_FOUND);
    await b.client.migrateKeys({ caller, migrationId: "m", apiId, keys: [{ hash: hashKey(plaintext) }] });
    await settle();
    expect((await a.client.verifyKey({ caller, key: plaintext })).code).toBe(VerifyCode.VALID);
  });
});
