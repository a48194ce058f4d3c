import { type Client, createClient, createRouterTransport, type Transport } from "@connectrpc/connect";
import { createIdentityDeps, identityMigrations, identityRoutes } from "@latchkey/identity";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createMemoryRatelimitDeps, ratelimitRoutes } from "@latchkey/ratelimit";
import { connect, createLogger, hashKey, MemoryBus, migrate, type Sql, TestClock } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf } from "../../testing/in-memory-keys.ts";
import { limit } from "../../testing/verification.ts";
import { createKeysDeps, type KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { keysMigrations } from "../migrations.ts";
import { keysRoutes } from "../routes.ts";

// Rate limits and credits must stay exact together under concurrency: a
// verification that is rate limited spends no credit, and one that passes its
// limits spends exactly one. Proven against real PostgreSQL, with one
// ratelimit service shared by two keys instances (two pools, as two processes).

const caller = callerOf("ws_default", "*");
const log = createLogger("keys", "silent");
// Fixed time: no window boundary can fall in the middle of a test.
const clock = new TestClock();
let db: TestDatabase;
let secondPool: Sql;
let ratelimit: Transport;
let identity: Client<typeof IdentityService>;
const instances: KeysDeps[] = [];

function instance(sql: Sql) {
  const bus = new MemoryBus();
  const identityTransport = createRouterTransport(
    identityRoutes(createIdentityDeps({ sql, bus, clock, log })),
  );
  const deps = createKeysDeps({ sql, bus, clock, log, identity: identityTransport, ratelimit });
  instances.push(deps);
  return { deps, client: createClient(KeysService, createRouterTransport(keysRoutes(deps))) };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  await migrate(db.sql, "identity", identityMigrations);
  secondPool = connect(db.url, { max: 20 });
  ratelimit = createRouterTransport(ratelimitRoutes(createMemoryRatelimitDeps({ clock })));
  identity = createClient(
    IdentityService,
    createRouterTransport(
      identityRoutes(createIdentityDeps({ sql: db.sql, bus: new MemoryBus(), clock, log })),
    ),
  );
});
afterAll(async () => {
  for (const deps of instances) deps.close();
  await secondPool?.end({ timeout: 5 });
  await db?.drop();
});

const count = (codes: VerifyCode[], code: VerifyCode) => codes.filter((c) => c === code).length;

async function remaining(client: Client<typeof KeysService>, keyId: string) {
  return (await client.getKey({ caller, keyId })).key?.credits?.remaining;
}

describe("verifyKey rate limits and credits on PostgreSQL", () => {
  it("gives exactly L VALID and leaves K - L credits for N concurrent verifications (L < K < N)", async () => {
    const { client } = instance(db.sql);
    const { apiId } = await client.createApi({ caller, name: "limits" });
    const { keyId, key } = await client.createKey({
      caller,
      apiId,
      credits: { remaining: 50n },
      ratelimits: [limit("calls", 20, true)],
    });
    const results = await Promise.all(Array.from({ length: 100 }, () => client.verifyKey({ caller, key })));
    const codes = results.map((r) => r.code);
    expect(count(codes, VerifyCode.VALID)).toBe(20);
    expect(count(codes, VerifyCode.RATE_LIMITED)).toBe(80);
    expect(await remaining(client, keyId)).toBe(30n);
  });

  it("stays exact when the verifications arrive as batches on two instances", async () => {
    const a = instance(db.sql);
    const b = instance(secondPool);
    const { apiId } = await a.client.createApi({ caller, name: "limits" });
    const { keyId, key } = await a.client.createKey({
      caller,
      apiId,
      credits: { remaining: 40n },
      ratelimits: [limit("calls", 25, true)],
    });
    const batches = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 === 0 ? a : b).client.verifyKeyBatch({
          callers: [caller],
          items: Array.from({ length: 10 }, () => ({ callerIndex: 0, request: { key } })),
        }),
      ),
    );
    const codes = batches.flatMap((res) =>
      res.results.map((r) => (r.result.case === "response" ? r.result.value.code : VerifyCode.UNSPECIFIED)),
    );
    expect(count(codes, VerifyCode.VALID)).toBe(25);
    expect(count(codes, VerifyCode.RATE_LIMITED)).toBe(55);
    expect(await remaining(a.client, keyId)).toBe(15n);
  });

  it("shares an identity's limit between its keys, each key spending only its own passed verifications", async () => {
    const { client, deps } = instance(db.sql);
    const { identityId } = await identity.createIdentity({
      caller,
      externalId: "user_pg",
      ratelimits: [limit("calls", 15, true)],
    });
    const { apiId } = await client.createApi({ caller, name: "identity" });
    const keys: { keyId: string; key: string }[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await client.createKey({ caller, apiId, credits: { remaining: 50n } });
      await deps.store.updateKey(created.keyId, { identityId, updatedAt: clock.now() });
      keyChanged(deps, { workspaceId: caller.workspaceId, hash: hashKey(created.key), keyId: created.keyId });
      keys.push(created);
    }
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => client.verifyKey({ caller, key: keys[i % 2]!.key })),
    );
    const valid = results.filter((r) => r.code === VerifyCode.VALID);
    expect(valid).toHaveLength(15);
    expect(
      count(
        results.map((r) => r.code),
        VerifyCode.RATE_LIMITED,
      ),
    ).toBe(45);
    expect(valid[0]?.identity).toMatchObject({ id: identityId, externalId: "user_pg" });
    const left = [await remaining(client, keys[0]!.keyId), await remaining(client, keys[1]!.keyId)];
    expect(Number(left[0]) + Number(left[1])).toBe(100 - 15);
    const perKey = keys.map((k) => valid.filter((r) => r.keyId === k.keyId).length);
    expect(left).toEqual(perKey.map((n) => BigInt(50 - n)));
  });

  it("evaluates a permission query through a role stored in PostgreSQL", async () => {
    const { client, deps } = instance(db.sql);
    await identity.createRole({ caller, name: "pg-editor", permissions: ["documents.*"] });
    const { apiId } = await client.createApi({ caller, name: "roles" });
    const { keyId, key } = await client.createKey({ caller, apiId, credits: { remaining: 3n } });
    await deps.store.updateKey(keyId, { roles: ["pg-editor"], updatedAt: clock.now() });
    keyChanged(deps, { workspaceId: caller.workspaceId, hash: hashKey(key), keyId });
    const granted = await client.verifyKey({ caller, key, permissions: "documents.write" });
    expect(granted).toMatchObject({
      code: VerifyCode.VALID,
      roles: ["pg-editor"],
      permissions: ["documents.*"],
    });
    const denied = await client.verifyKey({ caller, key, permissions: "billing.read" });
    expect(denied.code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);
    expect(await remaining(client, keyId)).toBe(2n);
  });
});
