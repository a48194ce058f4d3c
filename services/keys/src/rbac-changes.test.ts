import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { ErrorReason, hashKey } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../testing/in-memory-keys.ts";
import { grantChangePermissions, replacing } from "./rbac-changes.ts";

const ADD_ROLE = "rbac.*.add_role_to_key";
const REMOVE_ROLE = "rbac.*.remove_role_from_key";
const ADD_PERMISSION = "rbac.*.add_permission_to_key";
const REMOVE_PERMISSION = "rbac.*.remove_permission_from_key";
/** What a root key that may create and update keys, and nothing of rbac, holds. */
const KEY_EDITOR = ["api.*.update_key", "api.*.create_key"];

type Memory = ReturnType<typeof memoryKeys>;

/** ws_1 with roles reader and writer, permissions docs.read and docs.write, and a key holding reader and docs.read. */
async function fixture() {
  const m = memoryKeys();
  await m.rbac.role("reader", ["docs.read"]);
  await m.rbac.role("writer", ["docs.write"]);
  const apiId = await m.seed.api();
  const { keyId } = await m.seed.key({ apiId, roles: ["reader"], permissions: ["docs.read"] });
  return { m, apiId, keyId };
}

/** What the workspace's keys hold, to show a refused call changed nothing. */
async function snapshot(m: Memory, apiId: string) {
  const { keys } = await m.client.listKeys({ caller: callerOf("ws_1", "*"), apiId });
  return keys.map((k) => ({ keyId: k.keyId, roles: k.roles, permissions: k.permissions }));
}

interface Case {
  name: string;
  /** The rbac permissions it needs besides update_key and create_key. */
  needs: string[];
  call(m: Memory, caller: Caller, at: { apiId: string; keyId: string }): Promise<unknown>;
  /** Whether it names a key (else an API): what a caller of another workspace is answered. */
  namesKey: boolean;
}

const cases: Case[] = [
  {
    name: "addRoles",
    needs: [ADD_ROLE],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.addRoles({ caller, keyId, roles: ["writer"] }),
  },
  {
    name: "removeRoles",
    needs: [REMOVE_ROLE],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.removeRoles({ caller, keyId, roles: ["reader"] }),
  },
  {
    name: "setRoles",
    needs: [ADD_ROLE, REMOVE_ROLE],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.setRoles({ caller, keyId, roles: ["writer"] }),
  },
  {
    name: "setRoles to none",
    needs: [REMOVE_ROLE],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.setRoles({ caller, keyId, roles: [] }),
  },
  {
    name: "addPermissions",
    needs: [ADD_PERMISSION],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.addPermissions({ caller, keyId, permissions: ["docs.write"] }),
  },
  {
    name: "removePermissions",
    needs: [REMOVE_PERMISSION],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.removePermissions({ caller, keyId, permissions: ["docs.read"] }),
  },
  {
    name: "setPermissions",
    needs: [ADD_PERMISSION, REMOVE_PERMISSION],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.setPermissions({ caller, keyId, permissions: ["docs.write"] }),
  },
  {
    name: "setPermissions to none",
    needs: [REMOVE_PERMISSION],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.setPermissions({ caller, keyId, permissions: [] }),
  },
  {
    name: "updateKey with roles",
    needs: [ADD_ROLE, REMOVE_ROLE],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.updateKey({ caller, keyId, roles: { values: ["writer"] } }),
  },
  {
    name: "updateKey with no roles",
    needs: [REMOVE_ROLE],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.updateKey({ caller, keyId, roles: { values: [] } }),
  },
  {
    name: "updateKey with permissions",
    needs: [ADD_PERMISSION, REMOVE_PERMISSION],
    namesKey: true,
    call: (m, caller, { keyId }) =>
      m.client.updateKey({ caller, keyId, permissions: { values: ["docs.write"] } }),
  },
  {
    name: "updateKey with roles and permissions",
    needs: [ADD_ROLE, REMOVE_ROLE, ADD_PERMISSION, REMOVE_PERMISSION],
    namesKey: true,
    call: (m, caller, { keyId }) =>
      m.client.updateKey({
        caller,
        keyId,
        roles: { values: ["writer"] },
        permissions: { values: ["docs.write"] },
      }),
  },
  {
    name: "createKey with roles",
    needs: [ADD_ROLE],
    namesKey: false,
    call: (m, caller, { apiId }) => m.client.createKey({ caller, apiId, roles: ["writer"] }),
  },
  {
    name: "createKey with permissions",
    needs: [ADD_PERMISSION],
    namesKey: false,
    call: (m, caller, { apiId }) => m.client.createKey({ caller, apiId, permissions: ["docs.write"] }),
  },
  {
    name: "rerollKey of a key with roles and permissions (the new key gets them)",
    needs: [ADD_ROLE, ADD_PERMISSION],
    namesKey: true,
    call: (m, caller, { keyId }) => m.client.rerollKey({ caller, keyId, expiration: 60_000n }),
  },
  {
    name: "migrateKeys with roles",
    needs: [ADD_ROLE],
    namesKey: false,
    call: (m, caller, { apiId }) =>
      m.client.migrateKeys({
        caller,
        migrationId: "m",
        apiId,
        keys: [{ hash: hashKey("legacy_1") }, { hash: hashKey("legacy_2"), roles: ["writer"] }],
      }),
  },
  {
    name: "migrateKeys with permissions",
    needs: [ADD_PERMISSION],
    namesKey: false,
    call: (m, caller, { apiId }) =>
      m.client.migrateKeys({
        caller,
        migrationId: "m",
        apiId,
        keys: [{ hash: hashKey("legacy_1"), permissions: ["docs.write"] }],
      }),
  },
];

const lacks = (missing: string[]) =>
  `The root key lacks the permission${missing.length > 1 ? "s" : ""} ${missing.map((p) => `'${p}'`).join(", ")}.`;

describe("changing a key's roles or permissions needs the same rbac permissions whichever operation does it", () => {
  describe.each(cases)("$name", (c) => {
    it(`is refused 403 to a root key with update_key and create_key alone, naming ${c.needs.join(" and ")}, and changes nothing`, async () => {
      const { m, apiId, keyId } = await fixture();
      const before = await snapshot(m, apiId);
      expect(await rejection(c.call(m, callerOf("ws_1", ...KEY_EDITOR), { apiId, keyId }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: lacks(c.needs),
      });
      expect(await snapshot(m, apiId)).toEqual(before);
    });

    it.each(c.needs)("is refused without %s alone", async (missing) => {
      const { m, apiId, keyId } = await fixture();
      const caller = callerOf("ws_1", ...KEY_EDITOR, ...c.needs.filter((p) => p !== missing));
      expect(await rejection(c.call(m, caller, { apiId, keyId }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: lacks([missing]),
      });
    });

    it("passes with them", async () => {
      const { m, apiId, keyId } = await fixture();
      await expect(
        c.call(m, callerOf("ws_1", ...KEY_EDITOR, ...c.needs), { apiId, keyId }),
      ).resolves.toBeDefined();
    });

    it("answers a caller of another workspace as for a missing one, not 403", async () => {
      const { m, apiId, keyId } = await fixture();
      const { reason } = await rejection(c.call(m, callerOf("ws_2", ...KEY_EDITOR), { apiId, keyId }));
      expect(reason).toBe(c.namesKey ? ErrorReason.KEY_NOT_FOUND : ErrorReason.API_NOT_FOUND);
    });
  });

  it("asks nothing of rbac where nothing of roles or permissions changes", async () => {
    const { m, apiId } = await fixture();
    const caller = callerOf("ws_1", ...KEY_EDITOR);
    const plain = await m.client.createKey({ caller, apiId, name: "plain" });
    await m.client.updateKey({ caller, keyId: plain.keyId, name: "renamed" });
    await m.client.rerollKey({ caller, keyId: plain.keyId, expiration: 0n });
    const res = await m.client.migrateKeys({
      caller,
      migrationId: "m",
      apiId,
      keys: [{ hash: hashKey("x") }],
    });
    expect(res.failed).toEqual([]);
  });
});

describe("grantChangePermissions", () => {
  it("asks for adding what a change may add and for removing what it may remove", () => {
    expect(grantChangePermissions({})).toEqual([]);
    expect(grantChangePermissions({ roles: replacing(["a"]), permissions: replacing([]) })).toEqual([
      ADD_ROLE,
      REMOVE_ROLE,
      REMOVE_PERMISSION,
    ]);
  });
});
