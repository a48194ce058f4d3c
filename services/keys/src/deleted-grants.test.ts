import { create, toBinary } from "@bufbuild/protobuf";
import { IdentityChangedSchema } from "@latchkey/proto/identity/v1/events_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, IDENTITY_CHANGED, LoopProgress, MemoryBus, TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf } from "../testing/in-memory-keys.ts";
import { verificationKit } from "../testing/verification.ts";
import { DeletedGrants, MAX_REMOVALS_AT_ONCE } from "./deleted-grants.ts";
import type { DeletedGrant } from "./store/keys-store.ts";
import { KeyCache } from "./verify/key-cache.ts";

// Deleting a role or permission in the identity service takes it off every key (deleted-grants.ts).

const WRITE = { permissions: "documents.write" };

describe("deleted roles and permissions", () => {
  it("takes a deleted role off every key of the workspace, and only that role", async () => {
    const { deps, identity, seed, admin } = verificationKit();
    await seed.role("editor", ["documents.write"]);
    await seed.role("viewer", ["documents.read"]);
    const apiId = await seed.api();
    const a = await seed.key({ apiId, roles: ["viewer", "editor"] });
    const b = await seed.key({ apiId, roles: ["editor"] });
    const c = await seed.key({ apiId, roles: ["viewer"] });

    await identity.deleteRole({ caller: admin, role: "editor" });
    await deps.deletedGrants.settled();

    expect((await deps.store.findKeyById(a.keyId))?.roles).toEqual(["viewer"]);
    expect((await deps.store.findKeyById(b.keyId))?.roles).toEqual([]);
    expect((await deps.store.findKeyById(c.keyId))?.roles).toEqual(["viewer"]);
  });

  it("a role deleted and recreated under the same name does not grant to keys that had the old one", async () => {
    const { deps, identity, keys, seed, verify, admin } = verificationKit();
    await seed.role("admin", ["documents.write"]);
    const apiId = await seed.api();
    const old = await seed.key({ apiId, roles: ["admin"] });
    // Verified once, so the key sits in the cache with its old role.
    expect((await verify(old.key, WRITE)).code).toBe(VerifyCode.VALID);

    await identity.deleteRole({ caller: admin, role: "admin" });
    await deps.deletedGrants.settled();
    await seed.role("admin", ["documents.write"]);

    expect(await verify(old.key, WRITE)).toMatchObject({
      valid: false,
      code: VerifyCode.INSUFFICIENT_PERMISSIONS,
      roles: [],
    });
    // Given to a key now, the new role grants as any role does.
    const fresh = await seed.key({ apiId });
    await keys.addRoles({ caller: admin, keyId: fresh.keyId, roles: ["admin"] });
    expect((await verify(fresh.key, WRITE)).code).toBe(VerifyCode.VALID);
  });

  it("a permission deleted and recreated under the same slug does not grant to keys that held it directly", async () => {
    const { deps, identity, seed, verify, admin } = verificationKit();
    const apiId = await seed.api();
    const { keyId, key } = await seed.key({ apiId, permissions: ["documents.write", "documents.read"] });
    expect((await verify(key, WRITE)).code).toBe(VerifyCode.VALID);

    await identity.deletePermission({ caller: admin, permission: "documents.write" });
    await deps.deletedGrants.settled();
    await identity.createPermission({ caller: admin, name: "documents.write", slug: "documents.write" });

    expect((await deps.store.findKeyById(keyId))?.permissions).toEqual(["documents.read"]);
    expect(await verify(key, WRITE)).toMatchObject({
      code: VerifyCode.INSUFFICIENT_PERMISSIONS,
      permissions: ["documents.read"],
    });
  });

  it("leaves another workspace's keys naming a role of the same name alone", async () => {
    const { deps, identity, keys, admin } = verificationKit();
    const other = callerOf("ws_2", "*");
    await identity.createRole({ caller: admin, name: "admin", permissions: [] });
    await identity.createRole({ caller: other, name: "admin", permissions: ["documents.write"] });
    const { apiId } = await keys.createApi({ caller: other, name: "other" });
    const { keyId } = await keys.createKey({ caller: other, apiId, roles: ["admin"] });

    await identity.deleteRole({ caller: admin, role: "admin" });
    await deps.deletedGrants.settled();

    expect((await deps.store.findKeyById(keyId))?.roles).toEqual(["admin"]);
  });

  it("takes nothing off keys for changes that are not deletions", async () => {
    const { deps, identity, seed, admin } = verificationKit();
    await seed.role("editor", ["documents.write"]);
    const { keyId } = await seed.key({ apiId: await seed.api(), roles: ["editor"], permissions: ["a"] });

    await identity.setRolePermissions({ caller: admin, role: "editor", permissions: ["documents.read"] });
    await identity.createPermission({ caller: admin, name: "b", slug: "b" });
    await deps.deletedGrants.settled();

    expect(await deps.store.findKeyById(keyId)).toMatchObject({ roles: ["editor"], permissions: ["a"] });
  });

  it("grants nothing through a direct permission deleted when its deletion never reached the keys", async () => {
    const { deps, identity, seed, verify, admin } = verificationKit();
    const apiId = await seed.api();
    const { keyId, key } = await seed.key({ apiId, permissions: ["documents.write", "documents.read"] });
    expect((await verify(key, WRITE)).code).toBe(VerifyCode.VALID);
    // As if the message were lost: this instance no longer takes deletions off keys.
    await deps.deletedGrants.close();

    await identity.deletePermission({ caller: admin, permission: "documents.write" });

    expect((await deps.store.findKeyById(keyId))?.permissions).toEqual(["documents.write", "documents.read"]);
    expect(await verify(key, WRITE)).toMatchObject({
      code: VerifyCode.INSUFFICIENT_PERMISSIONS,
      permissions: ["documents.read"],
    });
    expect((await verify(key, { permissions: "documents.read" })).code).toBe(VerifyCode.VALID);
  });

  it("grants nothing through a role deleted when its deletion never reached the keys", async () => {
    const { deps, identity, seed, verify, admin } = verificationKit();
    await seed.role("editor", ["documents.write"]);
    const { key } = await seed.key({ apiId: await seed.api(), roles: ["editor"] });
    expect((await verify(key, WRITE)).code).toBe(VerifyCode.VALID);
    await deps.deletedGrants.close();

    await identity.deleteRole({ caller: admin, role: "editor" });

    expect(await verify(key, WRITE)).toMatchObject({ code: VerifyCode.INSUFFICIENT_PERMISSIONS, roles: [] });
  });

  it("runs one removal of a workspace at a time and two in all: a workspace deleting 200 roles holds one slot, another's removal goes at once", async () => {
    const bus = new MemoryBus();
    const started: DeletedGrant[] = [];
    const releases: (() => void)[] = [];
    let running = 0;
    let most = 0;
    const store = {
      async removeDeletedGrant(deleted: DeletedGrant) {
        started.push(deleted);
        most = Math.max(most, ++running);
        await new Promise<void>((r) => releases.push(r));
        running--;
        return [];
      },
    };
    const progress = new LoopProgress("test.deleted-grants");
    const grants = new DeletedGrants({
      store,
      bus,
      keyCache: new KeyCache(async () => undefined, new TestClock()),
      clock: new TestClock(),
      log: createLogger("keys", "silent"),
      progress,
    });
    const deleteRole = (workspaceId: string, i: number) =>
      bus.publish(
        IDENTITY_CHANGED,
        toBinary(
          IdentityChangedSchema,
          create(IdentityChangedSchema, {
            workspaceId,
            deleted: true,
            roleId: `role_${i}`,
            roleName: `r${i}`,
          }),
        ),
      );
    for (let i = 0; i < 200; i++) deleteRole("ws_attacker", i);
    deleteRole("ws_victim", 0);
    await new Promise((r) => setTimeout(r, 0));
    // The attacker's first and the victim's one are under way; the attacker's 199 others wait.
    expect(started.map((d) => d.workspaceId)).toEqual(["ws_attacker", "ws_victim"]);
    expect(grants.waiting).toBe(201);
    // Work moves, one of the attacker's at a time, each a mark of progress.
    while (releases.length > 0) {
      releases.shift()!();
      await new Promise((r) => setTimeout(r, 0));
    }
    await grants.settled();
    expect(started).toHaveLength(201);
    expect(started.filter((d) => d.workspaceId === "ws_attacker").map((d) => d.name)).toEqual(
      Array.from({ length: 200 }, (_, i) => `r${i}`),
    );
    expect(most).toBe(MAX_REMOVALS_AT_ONCE);
    expect(progress.marks).toBe(201);
    expect(grants.waiting).toBe(0);
    await grants.close();
  });
});
