import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { callerOf } from "../testing/in-memory-keys.ts";
import { type KeysInstance, keysInstancesOverNats } from "../testing/keys-instances.ts";

// Deleted roles and permissions taken off keys on PostgreSQL, with two keys
// instances hearing the identity service's deletion over real NATS.

const caller = callerOf("ws_default", "*");
const WRITE = "documents.write";
const kit = keysInstancesOverNats("keys-deleted-grants-test");
const { instance } = kit;

/** Until both instances have heard every message so far and finished what it started. */
async function settle(...all: KeysInstance[]) {
  for (let round = 0; round < 2; round++) {
    for (const i of all) await i.bus.nc.flush();
    for (const i of all) await i.deps.deletedGrants.settled();
  }
}

describe("deleted roles and permissions on PostgreSQL", () => {
  it("a role deleted and recreated under the same name does not grant to keys that had the old one", async () => {
    const a = await instance();
    const b = await instance();
    const { roleId } = await b.deps.identity.createRole({ caller, name: "admin", permissions: [WRITE] });
    const { apiId } = await a.client.createApi({ caller, name: "roles" });
    const { keyId, key } = await a.client.createKey({ caller, apiId, roles: ["admin"] });
    const other = await a.client.createKey({ caller, apiId, roles: ["admin"] });
    // Cached with the old role on both instances (once the creations' own invalidations have passed).
    await settle(a, b);
    for (const i of [a, b]) {
      expect((await i.client.verifyKey({ caller, key, permissions: WRITE })).code).toBe(VerifyCode.VALID);
    }

    await b.deps.identity.deleteRole({ caller, role: "admin" });
    await settle(a, b);
    await b.deps.identity.createRole({ caller, name: "admin", permissions: [WRITE] });
    await settle(a, b);

    for (const i of [a, b]) {
      expect(await i.client.verifyKey({ caller, key, permissions: WRITE })).toMatchObject({
        code: VerifyCode.INSUFFICIENT_PERMISSIONS,
        roles: [],
      });
    }
    const rows = await kit.db.sql<{ roles: string[] }[]>`SELECT roles FROM keys
      WHERE id IN (${keyId}, ${other.keyId})`;
    expect(rows.map((r) => r.roles)).toEqual([[], []]);
    // Both instances heard the deletion; it was applied once.
    const applied = await kit.db.sql`SELECT id FROM keys_deleted_grants WHERE id = ${roleId}`;
    expect(applied).toHaveLength(1);
  });

  it("takes a deleted permission off the keys that held it directly, and it grants nothing recreated", async () => {
    const a = await instance();
    const b = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "permissions" });
    const { keyId, key } = await a.client.createKey({
      caller,
      apiId,
      permissions: [WRITE, "documents.read"],
    });
    await settle(a, b);
    expect((await b.client.verifyKey({ caller, key, permissions: WRITE })).code).toBe(VerifyCode.VALID);

    await a.deps.identity.deletePermission({ caller, permission: WRITE });
    await settle(a, b);
    await a.deps.identity.createPermission({ caller, name: WRITE, slug: WRITE });
    await settle(a, b);

    const [row] = await kit.db.sql<
      { permissions: string[] }[]
    >`SELECT permissions FROM keys WHERE id = ${keyId}`;
    expect(row?.permissions).toEqual(["documents.read"]);
    for (const i of [a, b]) {
      expect(await i.client.verifyKey({ caller, key, permissions: WRITE })).toMatchObject({
        code: VerifyCode.INSUFFICIENT_PERMISSIONS,
        permissions: ["documents.read"],
      });
    }
  });

  it("keeps a role given back to a key after its deletion was applied, however late another instance hears it", async () => {
    const a = await instance();
    const { roleId } = await a.deps.identity.createRole({ caller, name: "late", permissions: [] });
    const { apiId } = await a.client.createApi({ caller, name: "late" });
    const { keyId } = await a.client.createKey({ caller, apiId, roles: ["late"] });
    await a.deps.identity.deleteRole({ caller, role: "late" });
    await settle(a);
    await a.deps.identity.createRole({ caller, name: "late", permissions: [] });
    await a.client.addRoles({ caller, keyId, roles: ["late"] });

    // The old deletion heard again, as a slow instance would.
    await a.deps.deletedGrants.remove({ id: roleId, workspaceId: "ws_default", list: "roles", name: "late" });

    const [row] = await kit.db.sql<{ roles: string[] }[]>`SELECT roles FROM keys WHERE id = ${keyId}`;
    expect(row?.roles).toEqual(["late"]);
  });
});
