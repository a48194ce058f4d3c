import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { identityMigrations } from "@latchkey/identity";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, ErrorReason, migrate, NatsBus } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf, rejection } from "../testing/in-memory-keys.ts";
import { keysDepsOverDatabase } from "../testing/keys-deps.ts";
import type { KeysDeps } from "./deps.ts";
import { keysMigrations } from "./migrations.ts";
import { keysRoutes } from "./routes.ts";

// Two keys instances on one PostgreSQL database, each with the identity service
// in-process on the same database (createKeysDeps' default), caches kept fresh through NATS.

const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const log = createLogger("keys", "silent");
const admin = callerOf("ws_default", "*");
const verifier = callerOf("ws_default", "api.*.verify_key");
const adder = callerOf("ws_default", "api.*.update_key", "rbac.*.add_permission_to_key");
let db: TestDatabase;
const instances: { deps: KeysDeps; client: Client<typeof KeysService>; bus: NatsBus }[] = [];

async function instance() {
  const bus = await NatsBus.connect(natsUrl, log, "keys-rbac-test");
  const deps = keysDepsOverDatabase(db.sql, bus, log);
  const entry = { deps, bus, client: createClient(KeysService, createRouterTransport(keysRoutes(deps))) };
  instances.push(entry);
  return entry;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  await migrate(db.sql, "identity", identityMigrations);
});
afterAll(async () => {
  for (const i of instances) {
    i.deps.close();
    await i.bus.close();
  }
  await db?.drop();
});

describe("key permissions and roles on PostgreSQL", () => {
  it("loses no permission when many are added at once through two instances, creating each once", async () => {
    const a = await instance();
    const b = await instance();
    const { apiId } = await a.client.createApi({ caller: admin, name: "rbac" });
    const { keyId } = await a.client.createKey({ caller: admin, apiId, permissions: ["base"] });
    const slugs = Array.from({ length: 24 }, (_, i) => `p.${String(i).padStart(2, "0")}`);
    await Promise.all(
      slugs.map((slug, i) =>
        (i % 2 === 0 ? a : b).client.addPermissions({ caller: admin, keyId, permissions: [slug, "base"] }),
      ),
    );
    const res = await b.client.addPermissions({ caller: adder, keyId, permissions: ["base"] });
    expect(res.permissions.map((p) => p.slug)).toEqual(["base", ...slugs]);
    const [row] = await db.sql<{ count: number }[]>`SELECT count(*)::int AS count FROM permissions`;
    expect(row?.count).toBe(25);
  });

  it("links keys to one identity per externalId, and getKey answers it", async () => {
    const a = await instance();
    const { apiId } = await a.client.createApi({ caller: admin, name: "identities" });
    const keys = await Promise.all(
      [1, 2, 3].map(() => a.client.createKey({ caller: admin, apiId, externalId: "customer_7" })),
    );
    const identities = await Promise.all(
      keys.map(async (k) => (await a.client.getKey({ caller: admin, keyId: k.keyId })).key?.identity?.id),
    );
    expect(new Set(identities).size).toBe(1);
    expect(identities[0]).toMatch(/^id_/);
    const rows = await db.sql`SELECT identity_id FROM keys WHERE external_id = 'customer_7'`;
    expect(rows.map((r) => r["identity_id"])).toEqual([identities[0], identities[0], identities[0]]);
  });

  it("applies a role change made on one instance to the next verification on the other", async () => {
    const a = await instance();
    const b = await instance();
    const { apiId } = await a.client.createApi({ caller: admin, name: "roles" });
    const { keyId, key } = await a.client.createKey({ caller: admin, apiId });
    const roleId = (
      await a.deps.identity.createRole({ caller: admin, name: "auditor", permissions: ["logs.read"] })
    ).roleId;
    const verify = () => b.client.verifyKey({ caller: verifier, key, permissions: "logs.read" });
    expect((await verify()).code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);
    const added = await a.client.addRoles({ caller: admin, keyId, roles: ["auditor"] });
    expect(added.roles.map((r) => [r.id, r.name, r.permissions.map((p) => p.slug)])).toEqual([
      [roleId, "auditor", ["logs.read"]],
    ]);
    await waitFor(async () => (await verify()).code === VerifyCode.VALID);
    await a.client.setRoles({ caller: admin, keyId, roles: [] });
    await waitFor(async () => (await verify()).code === VerifyCode.INSUFFICIENT_PERMISSIONS);
  });

  it("creates nothing and changes nothing when setPermissions names a missing slug without create_permission", async () => {
    const a = await instance();
    const { apiId } = await a.client.createApi({ caller: admin, name: "refused" });
    const { keyId } = await a.client.createKey({ caller: admin, apiId, permissions: ["kept"] });
    const caller = callerOf(
      "ws_default",
      "api.*.update_key",
      "rbac.*.add_permission_to_key",
      "rbac.*.remove_permission_from_key",
    );
    const failure = await rejection(a.client.setPermissions({ caller, keyId, permissions: ["never.made"] }));
    expect(failure.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
    expect(failure.message).toContain("'rbac.*.create_permission'");
    expect(await db.sql`SELECT 1 FROM permissions WHERE slug = 'never.made'`).toHaveLength(0);
    expect((await db.sql`SELECT permissions FROM keys WHERE id = ${keyId}`)[0]?.["permissions"]).toEqual([
      "kept",
    ]);
  });
});

/** Other instances learn of a change over NATS, so their next verification may come a moment later. */
async function waitFor(condition: () => Promise<boolean>, timeoutMs = 2_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
