import { createClient, createRouterTransport } from "@connectrpc/connect";
import { createMemoryIdentityDeps, identityRoutes } from "@latchkey/identity";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { createLogger, MemoryBus, TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf } from "../test-kit.ts";
import { IdentityCache } from "./identity-cache.ts";

const admin = callerOf("ws_1", "*");

/** An identity service whose events reach the cache only when `connected`. */
function setup(connected: boolean, maxPerWorkspace?: number, maxBytes?: number) {
  const clock = new TestClock();
  const identityBus = new MemoryBus();
  const identity = createClient(
    IdentityService,
    createRouterTransport(
      identityRoutes(
        createMemoryIdentityDeps({ bus: identityBus, clock, log: createLogger("identity", "silent") }),
      ),
    ),
  );
  const cache = new IdentityCache(identity, connected ? identityBus : new MemoryBus(), {
    clock,
    ttlMs: 60_000,
    ...(maxPerWorkspace ? { maxPerWorkspace } : {}),
    ...(maxBytes ? { maxBytes } : {}),
  });
  return { clock, identity, cache };
}

const names = (roles: { name: string }[]) => roles.map((r) => r.name);

describe("IdentityCache", () => {
  it("drops a workspace's roles and permissions as soon as the identity service announces a change", async () => {
    const { identity, cache } = setup(true);
    await identity.createRole({ caller: admin, name: "admin", permissions: ["a"] });
    expect(names(await cache.resolveRoles("ws_1", ["admin"]))).toEqual(["admin"]);
    expect(await cache.existingPermissions("ws_1", ["a", "b"])).toEqual(["a"]);

    await identity.deleteRole({ caller: admin, role: "admin" });
    await identity.deletePermission({ caller: admin, permission: "a" });

    expect(await cache.resolveRoles("ws_1", ["admin"])).toEqual([]);
    expect(await cache.existingPermissions("ws_1", ["a", "b"])).toEqual([]);
  });

  it("forgets what it cached a minute after loading it, should the announcement be lost", async () => {
    const { identity, cache, clock } = setup(false);
    await identity.createRole({ caller: admin, name: "admin", permissions: ["a"] });
    expect(names(await cache.resolveRoles("ws_1", ["admin"]))).toEqual(["admin"]);
    expect(await cache.existingPermissions("ws_1", ["a"])).toEqual(["a"]);

    await identity.deleteRole({ caller: admin, role: "admin" });
    await identity.deletePermission({ caller: admin, permission: "a" });
    clock.advance(60_000);
    expect(names(await cache.resolveRoles("ws_1", ["admin"]))).toEqual(["admin"]);

    clock.advance(1);
    expect(await cache.resolveRoles("ws_1", ["admin"])).toEqual([]);
    expect(await cache.existingPermissions("ws_1", ["a"])).toEqual([]);
  });

  it("answers cached permissions without a promise, the same array when all exist", async () => {
    const { identity, cache } = setup(true);
    await identity.createPermission({ caller: admin, name: "a", slug: "a" });
    const slugs = ["a"];
    await cache.existingPermissions("ws_1", slugs);
    expect(cache.existingPermissions("ws_1", slugs)).toBe(slugs);
  });

  it("keeps at most maxPerWorkspace entries of a kind per workspace, dropping the oldest loaded", async () => {
    const { identity, cache } = setup(true, 2);
    for (const slug of ["a", "b", "c", "d"])
      await identity.createPermission({ caller: admin, name: slug, slug });
    for (const slug of ["a", "b", "c", "d"])
      expect(await cache.existingPermissions("ws_1", [slug])).toEqual([slug]);
    // Cached entries answer without a promise; a, then b, were dropped as c and d came.
    const cached = (slug: string) => !(cache.existingPermissions("ws_1", [slug]) instanceof Promise);
    expect(["a", "b", "c", "d"].map(cached)).toEqual([false, false, true, true]);
  });

  describe("grants", () => {
    const key = (roles: string[], permissions: string[]) => ({ workspaceId: "ws_1", roles, permissions });

    it("resolves a key's grants once and answers the same grants, without a promise, after", async () => {
      const { identity, cache } = setup(true);
      await identity.createRole({
        caller: admin,
        name: "editor",
        permissions: ["documents.read", "documents.write"],
      });
      await identity.createPermission({ caller: admin, name: "billing.read", slug: "billing.read" });
      const record = key(["editor", "gone"], ["billing.read", "documents.read", "missing"]);
      const first = await cache.grants(record);
      expect(first).toMatchObject({
        roleNames: ["editor"],
        permissions: ["billing.read", "documents.read", "documents.write"],
      });
      expect([...first.held]).toEqual(["billing.read", "documents.read", "documents.write"]);
      const again = cache.grants(record);
      expect(again).not.toBeInstanceOf(Promise);
      expect(again).toBe(first);
      // Another record (the key changed and was loaded again) is resolved on its own.
      expect(cache.grants(key(["editor"], []))).not.toBe(first);
    });

    it("resolves them again once the identity service announces a change", async () => {
      const { identity, cache } = setup(true);
      await identity.createRole({ caller: admin, name: "editor", permissions: ["documents.read"] });
      const record = key(["editor"], []);
      const before = await cache.grants(record);
      expect(before.permissions).toEqual(["documents.read"]);
      await identity.deleteRole({ caller: admin, role: "editor" });
      const after = await cache.grants(record);
      expect(after).not.toBe(before);
      expect(after).toMatchObject({ roles: [], roleNames: [], permissions: [] });
    });

    it("resolves them again after the TTL, should the announcement be lost", async () => {
      const { identity, cache, clock } = setup(false);
      await identity.createRole({ caller: admin, name: "editor", permissions: ["documents.read"] });
      const record = key(["editor"], []);
      const before = await cache.grants(record);
      await identity.deleteRole({ caller: admin, role: "editor" });
      clock.advance(60_000);
      expect(cache.grants(record)).toBe(before);
      clock.advance(1);
      expect((await cache.grants(record)).roleNames).toEqual([]);
    });

    it("answers one shared empty grants for a key without roles or permissions", () => {
      const { cache } = setup(true);
      const none = cache.grants(key([], []));
      expect(none).toEqual({ roles: [], roleNames: [], permissions: [], held: new Set() });
      expect(cache.grants(key([], []))).toBe(none);
    });
  });

  it("bounds what it holds by bytes across workspaces: the workspace loaded longest ago goes first", async () => {
    const KiB = 1024;
    // Announcements lost: what is still cached answers an identity deleted since, what was dropped does not.
    const { identity, cache } = setup(false, undefined, 1024 * KiB);
    // About 57 KiB counted each (two bytes a character), under the 64 KiB an entry may count here.
    const meta = JSON.stringify({ blob: "x".repeat(28 * KiB) });
    const ids = new Map<string, string[]>();
    for (const ws of ["ws_a", "ws_b", "ws_c", "ws_d", "ws_e"]) {
      const caller = callerOf(ws, "*");
      const made: string[] = [];
      for (let i = 0; i < 4; i++) {
        made.push(
          (await identity.createIdentity({ caller, externalId: `user_${i}`, metaJson: meta })).identityId,
        );
      }
      ids.set(ws, made);
      for (const id of made) expect((await cache.identity(ws, id))?.metaJson).toBe(meta);
      expect(cache.bytes).toBeLessThanOrEqual(1024 * KiB);
    }
    // 20 of them count more than the bound: the first workspace's went.
    expect(cache.bytes).toBeGreaterThan(512 * KiB);
    for (const [ws, made] of ids) {
      for (const id of made) await identity.deleteIdentity({ caller: callerOf(ws, "*"), identity: id });
    }
    expect(await cache.identity("ws_a", ids.get("ws_a")![0]!)).toBeNull();
    for (const id of ids.get("ws_e")!) expect((await cache.identity("ws_e", id))?.metaJson).toBe(meta);
  });

  it("does not keep an entry larger than a sixteenth of its bound, and answers it all the same", async () => {
    const { identity, cache } = setup(false, undefined, 1024 * 1024);
    const caller = callerOf("ws_1", "*");
    const meta = JSON.stringify({ blob: "x".repeat(40 * 1024) });
    const { identityId } = await identity.createIdentity({ caller, externalId: "big", metaJson: meta });
    expect((await cache.identity("ws_1", identityId))?.metaJson).toBe(meta);
    expect(cache.bytes).toBe(0);
    await identity.deleteIdentity({ caller, identity: identityId });
    expect(await cache.identity("ws_1", identityId)).toBeNull();
  });
});
