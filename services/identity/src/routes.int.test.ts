import { createClient, createRouterTransport } from "@connectrpc/connect";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { createLogger, ErrorReason, MemoryBus, migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectReason } from "../testing/in-memory-identity.ts";
import { createIdentityDeps } from "./deps.ts";
import { identityMigrations } from "./migrations.ts";
import { identityRoutes } from "./routes.ts";

let db: TestDatabase;
let client: ReturnType<typeof createClient<typeof IdentityService>>;
let n = 0;
/** Each test in its own workspace, so one database serves them all. */
const workspace = () => ({ workspaceId: `ws_int_${++n}`, rootKeyId: "rk", permissions: ["*"] });

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "identity", identityMigrations);
  // Applying twice is a no-op, as when replicas start together.
  await migrate(db.sql, "identity", identityMigrations);
  const deps = createIdentityDeps({
    sql: db.sql,
    bus: new MemoryBus(),
    log: createLogger("identity", "silent"),
  });
  client = createClient(IdentityService, createRouterTransport(identityRoutes(deps)));
});

afterAll(async () => {
  await db.drop();
});

describe("identity service on PostgreSQL", () => {
  it("creates, reads, updates and deletes an identity", async () => {
    const caller = workspace();
    const { identityId } = await client.createIdentity({
      caller,
      externalId: "user_1",
      metaJson: '{"plan":"pro"}',
      ratelimits: [{ name: "requests", limit: 100n, duration: 60_000n, autoApply: true }],
    });
    const { identity } = await client.getIdentity({ caller, identity: "user_1" });
    expect(identity?.id).toBe(identityId);
    expect(JSON.parse(identity?.metaJson ?? "null")).toEqual({ plan: "pro" });
    const keptId = identity?.ratelimits[0]?.id;
    const updated = await client.updateIdentity({
      caller,
      identity: identityId,
      ratelimits: { ratelimits: [{ name: "requests", limit: 5n, duration: 1000n, autoApply: false }] },
    });
    expect(updated.identity?.ratelimits.map((r) => [r.id, r.limit, r.duration, r.autoApply])).toEqual([
      [keptId, 5n, 1000n, false],
    ]);
    await expectReason(
      client.createIdentity({ caller, externalId: "user_1" }),
      ErrorReason.IDENTITY_ALREADY_EXISTS,
    );
    await client.deleteIdentity({ caller, identity: "user_1" });
    await expectReason(client.getIdentity({ caller, identity: identityId }), ErrorReason.IDENTITY_NOT_FOUND);
  });

  it("answers one identity to concurrent ensures of the same externalId", async () => {
    const caller = workspace();
    const all = await Promise.all(
      Array.from({ length: 8 }, () => client.ensureIdentity({ caller, externalId: "burst" })),
    );
    expect(new Set(all.map((r) => r.identity?.id)).size).toBe(1);
    expect(all.filter((r) => r.created)).toHaveLength(1);
  });

  it("creates roles concurrently that share a new permission, which is created once", async () => {
    const caller = workspace();
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        client.createRole({ caller, name: `r${i}`, permissions: ["shared.new"] }),
      ),
    );
    const { permissions } = await client.listPermissions({ caller });
    expect(permissions.map((p) => p.slug)).toEqual(["shared.new"]);
    const { roles, missing } = await client.resolveRoles({ caller, names: ["r0", "r5", "nope"] });
    expect(roles.map((r) => [r.name, r.permissions.map((p) => p.id)])).toEqual([
      ["r0", [permissions[0]?.id]],
      ["r5", [permissions[0]?.id]],
    ]);
    expect(missing).toEqual(["nope"]);
  });

  it("replaces a role's permissions and drops a deleted permission from it", async () => {
    const caller = workspace();
    await client.createRole({ caller, name: "r", permissions: ["a", "b"] });
    const set = await client.setRolePermissions({ caller, role: "r", permissions: ["b", "c"] });
    expect(set.permissions.map((p) => p.slug)).toEqual(["b", "c"]);
    await client.deletePermission({ caller, permission: "c" });
    expect((await client.getRole({ caller, role: "r" })).role?.permissions.map((p) => p.slug)).toEqual(["b"]);
  });

  it("pages and searches identities", async () => {
    const caller = workspace();
    for (const e of ["alpha", "Beta", "gamma"]) await client.createIdentity({ caller, externalId: e });
    const first = await client.listIdentities({ caller, page: { limit: 2 } });
    const second = await client.listIdentities({ caller, page: { limit: 2, cursor: first.page?.cursor } });
    expect(first.identities).toHaveLength(2);
    expect(second.identities).toHaveLength(1);
    expect(second.page?.hasMore).toBe(false);
    const found = await client.listIdentities({ caller, search: "BET" });
    expect(found.identities.map((i) => i.externalId)).toEqual(["Beta"]);
  });
});
