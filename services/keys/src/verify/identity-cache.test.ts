import { createClient, createRouterTransport } from "@connectrpc/connect";
import { createMemoryIdentityDeps, identityRoutes } from "@latchkey/identity";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { createLogger, ErrorReason, errorDetailOf, MemoryBus, TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf } from "../../testing/in-memory-keys.ts";
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

  describe("shared by workspaces, bounded by bytes", () => {
    const KiB = 1024;
    // About 57 KiB counted each (two bytes a character), under the 64 KiB an entry may count here.
    const meta = JSON.stringify({ blob: "x".repeat(28 * KiB) });

    /** `count` identities of `ws`, each loaded into the cache once. */
    async function loaded(
      identity: ReturnType<typeof setup>["identity"],
      cache: IdentityCache,
      ws: string,
      count: number,
    ) {
      const made: string[] = [];
      for (let i = 0; i < count; i++) {
        const caller = callerOf(ws, "*");
        made.push(
          (await identity.createIdentity({ caller, externalId: `user_${i}`, metaJson: meta })).identityId,
        );
        expect((await cache.identity(ws, made[i]!))?.metaJson).toBe(meta);
        expect(cache.bytes).toBeLessThanOrEqual(1024 * KiB);
      }
      return made;
    }

    /** Which of `ids` the cache still holds: with announcements lost, a deleted identity it holds still answers. */
    async function stillCached(
      identity: ReturnType<typeof setup>["identity"],
      cache: IdentityCache,
      ws: string,
      ids: string[],
    ) {
      for (const id of ids) await identity.deleteIdentity({ caller: callerOf(ws, "*"), identity: id });
      const held: string[] = [];
      for (const id of ids) if ((await cache.identity(ws, id)) !== null) held.push(id);
      return held;
    }

    it("a workspace loading far more than its share drops its own oldest, never another's within its share", async () => {
      const { identity, cache } = setup(false, undefined, 1024 * KiB);
      const victim = await loaded(identity, cache, "ws_victim", 4);
      const victimBytes = cache.held("ws_victim");
      const one = victimBytes / 4;
      // 40 of them: more than twice the bound, by one workspace.
      const attacker = await loaded(identity, cache, "ws_attacker", 40);
      expect(cache.held("ws_victim")).toBe(victimBytes);
      expect(await stillCached(identity, cache, "ws_victim", victim)).toEqual(victim);
      // The attacker keeps the room the victim leaves, with its most recent.
      expect(cache.held("ws_attacker")).toBeGreaterThan(1024 * KiB - victimBytes - one);
      expect(cache.held("ws_attacker")).toBeLessThanOrEqual(1024 * KiB - victimBytes);
      expect(await stillCached(identity, cache, "ws_attacker", attacker.slice(-10))).toEqual(
        attacker.slice(-10),
      );
    });

    it("gives a workspace within its share room from the workspace furthest above it", async () => {
      const { identity, cache } = setup(false, undefined, 1024 * KiB);
      const a = await loaded(identity, cache, "ws_a", 20);
      const full = cache.held("ws_a");
      // Two workspaces: a share of 512 KiB (8 of these). B, within it, took its room from A.
      const b = await loaded(identity, cache, "ws_b", 5);
      expect(cache.held("ws_a")).toBe(full - cache.held("ws_b"));
      expect(await stillCached(identity, cache, "ws_b", b)).toEqual(b);
      expect(await stillCached(identity, cache, "ws_a", a.slice(-8))).toEqual(a.slice(-8));
    });
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

  it("looks up at most maxLookupsPerWorkspace of one workspace at once: past it UNAVAILABLE, others unaffected", async () => {
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const asked: string[] = [];
    const client = {
      async resolveRoles({ caller, names }: { caller?: { workspaceId: string }; names: string[] }) {
        for (const n of names) asked.push(`${caller?.workspaceId}/${n}`);
        await gate;
        return { roles: names.map((name) => ({ name, permissions: [] })) };
      },
    } as unknown as ConstructorParameters<typeof IdentityCache>[0];
    const cache = new IdentityCache(client, new MemoryBus(), { maxLookupsPerWorkspace: 100 });
    const flood = Array.from({ length: 100 }, (_, i) => cache.resolveRoles("ws_attacker", [`r${i}`]));
    const refused = await cache.resolveRoles("ws_attacker", ["r100"]).catch((err: unknown) => err);
    expect(errorDetailOf(refused)?.reason).toBe(ErrorReason.UNAVAILABLE);
    const victim = cache.resolveRoles("ws_victim", ["admin"]);
    release();
    expect(names(await victim)).toEqual(["admin"]);
    expect((await Promise.all(flood)).flat()).toHaveLength(100);
    expect(asked.filter((a) => a.startsWith("ws_attacker/"))).toHaveLength(100);
    // Once answered, its lookups go again.
    expect(names(await cache.resolveRoles("ws_attacker", ["r100"]))).toEqual(["r100"]);
  });
});
