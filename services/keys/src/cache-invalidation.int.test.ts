import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, migrate, NatsBus } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeysDeps, type KeysDeps } from "./deps.ts";
import { keyChanged } from "./events.ts";
import { keysMigrations } from "./migrations.ts";
import { keysRoutes } from "./routes.ts";
import { callerOf } from "./test-kit.ts";

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
  const deps = createKeysDeps({ sql: db.sql, bus, log });
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

    // Instance b changes the key and announces it, as updateKey will (issue 3).
    await db.sql`UPDATE keys SET enabled = false WHERE id = ${keyId}`;
    const [row] = await db.sql<{ hash: string }[]>`SELECT hash FROM keys WHERE id = ${keyId}`;
    keyChanged(b.deps, { workspaceId: "ws_default", hash: row!.hash, keyId, apiId });
    await b.bus.nc.flush();
    // A round trip on a's connection returns after the server has delivered what came before it.
    await a.bus.nc.flush();

    expect((await a.client.verifyKey({ caller, key })).code).toBe(VerifyCode.DISABLED);
  });
});
