import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { identityMigrations } from "@latchkey/identity";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, hashKey, migrate, NatsBus } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeysDeps, type KeysDeps } from "./deps.ts";
import { keyChanged } from "./events.ts";
import { keysMigrations } from "./migrations.ts";
import { keysRoutes } from "./routes.ts";
import { callerOf } from "./test-kit.ts";
import { limit } from "./verify-test-kit.ts";

// Roles and identities cached for verification, dropped on every instance
// when the identity service announces a change over real NATS.

const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const log = createLogger("keys", "silent");
const caller = callerOf("ws_default", "*");
let db: TestDatabase;
const buses: NatsBus[] = [];
const instances: KeysDeps[] = [];

/** A keys instance whose identity service runs in process, on its own NATS connection. */
async function instance() {
  const bus = await NatsBus.connect(natsUrl, log, "keys-identity-test");
  buses.push(bus);
  const deps = createKeysDeps({ sql: db.sql, bus, log });
  instances.push(deps);
  const client: Client<typeof KeysService> = createClient(
    KeysService,
    createRouterTransport(keysRoutes(deps)),
  );
  return { deps, bus, client };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  await migrate(db.sql, "identity", identityMigrations);
});
afterAll(async () => {
  for (const deps of instances) deps.close();
  for (const b of buses) await b.close();
  await db?.drop();
});

describe("identity caches across instances", () => {
  it("applies a role's permission change made through another instance at the next verification", async () => {
    const a = await instance();
    const b = await instance();
    await b.deps.identity.createRole({ caller, name: "viewer", permissions: ["documents.read"] });
    const { apiId } = await a.client.createApi({ caller, name: "roles" });
    const { keyId, key } = await a.client.createKey({ caller, apiId });
    await a.deps.store.updateKey(keyId, { roles: ["viewer"], updatedAt: Date.now() });
    keyChanged(a.deps, { workspaceId: caller.workspaceId, hash: hashKey(key), keyId });
    const query = { caller, key, permissions: "documents.write" };
    expect((await a.client.verifyKey(query)).code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);

    await b.deps.identity.setRolePermissions({
      caller,
      role: "viewer",
      permissions: ["documents.read", "documents.write"],
    });
    await b.bus.nc.flush();
    await a.bus.nc.flush();

    expect((await a.client.verifyKey(query)).code).toBe(VerifyCode.VALID);
  });

  it("applies an identity's new limits made through another instance at the next verification", async () => {
    const a = await instance();
    const b = await instance();
    const { identityId } = await b.deps.identity.createIdentity({
      caller,
      externalId: "user_nats",
      ratelimits: [limit("calls", 100, true)],
    });
    const { apiId } = await a.client.createApi({ caller, name: "identities" });
    const { keyId, key } = await a.client.createKey({ caller, apiId });
    await a.deps.store.updateKey(keyId, { identityId, updatedAt: Date.now() });
    keyChanged(a.deps, { workspaceId: caller.workspaceId, hash: hashKey(key), keyId });
    expect((await a.client.verifyKey({ caller, key })).identity?.ratelimits).toMatchObject([{ limit: 100n }]);

    await b.deps.identity.updateIdentity({
      caller,
      identity: identityId,
      ratelimits: { ratelimits: [limit("calls", 5, true)] },
    });
    await b.bus.nc.flush();
    await a.bus.nc.flush();

    const res = await a.client.verifyKey({ caller, key });
    expect(res.identity?.ratelimits).toMatchObject([{ limit: 5n }]);
    expect(res.ratelimits).toMatchObject([{ name: "calls", limit: 5n }]);
  });
});
