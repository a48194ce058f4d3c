import { randomUUID } from "node:crypto";
import { newId } from "@latchkey/runtime";
import { beforeEach, describe, expect, it } from "vitest";
import type {
  IdentityRecord,
  IdentityStore,
  PermissionRecord,
  RatelimitRecord,
} from "../src/store/identity-store.ts";

/** What every IdentityStore must do; run on memory (unit) and PostgreSQL (integration). */
export function identityStoreContract(name: string, makeStore: () => Promise<IdentityStore> | IdentityStore) {
  describe(`${name} identity store`, () => {
    // Stores may be shared between tests (one database per file): each test works in its own workspaces.
    let wsA = "";
    let wsB = "";
    let store: IdentityStore;
    beforeEach(async () => {
      wsA = `ws_${randomUUID()}`;
      wsB = `ws_${randomUUID()}`;
      store = await makeStore();
    });

    const limit = (name: string, over: Partial<RatelimitRecord> = {}): RatelimitRecord => ({
      id: newId("rl"),
      name,
      limit: 10,
      duration: 60_000,
      autoApply: false,
      ...over,
    });
    const identity = (over: Partial<IdentityRecord> = {}): IdentityRecord => ({
      id: newId("id"),
      workspaceId: wsA,
      externalId: `user_${randomUUID()}`,
      meta: null,
      ratelimits: [],
      ipAllowList: [],
      createdAt: 1_000,
      updatedAt: 1_000,
      ...over,
    });
    const permission = (slug: string, over: Partial<PermissionRecord> = {}): PermissionRecord => ({
      id: newId("perm"),
      workspaceId: wsA,
      name: slug,
      slug,
      description: null,
      createdAt: 2_000,
      ...over,
    });
    const role = (name: string, over: { workspaceId?: string; description?: string | null } = {}) => ({
      id: newId("role"),
      workspaceId: over.workspaceId ?? wsA,
      name,
      description: over.description ?? null,
      createdAt: 3_000,
    });
    const metaOf = (i: IdentityRecord | undefined) => (i?.meta == null ? i?.meta : JSON.parse(i.meta));

    describe("identities", () => {
      it("inserts an identity with its limits ordered by name and finds it by id and by externalId", async () => {
        const rec = identity({
          meta: JSON.stringify({ plan: "pro", n: 1 }),
          ratelimits: [limit("tokens", { limit: 5, duration: 1_000, autoApply: true }), limit("requests")],
        });
        const { created, identity: stored } = await store.insertIdentity(rec);
        expect(created).toBe(true);
        expect({ ...stored, meta: metaOf(stored) }).toEqual({
          ...rec,
          meta: { plan: "pro", n: 1 },
          ratelimits: [rec.ratelimits[1], rec.ratelimits[0]],
        });
        expect((await store.findIdentity(wsA, rec.id))?.id).toBe(rec.id);
        expect((await store.findIdentity(wsA, rec.externalId))?.id).toBe(rec.id);
        expect(await store.findIdentity(wsA, "id_missing")).toBeUndefined();
      });

      it("answers the existing identity, unchanged, when the externalId is taken", async () => {
        const first = identity({ ratelimits: [limit("a")] });
        await store.insertIdentity(first);
        const again = await store.insertIdentity(identity({ externalId: first.externalId, meta: "{}" }));
        expect(again.created).toBe(false);
        expect(again.identity).toEqual(first);
      });

      it("keeps workspaces apart: the same externalId in two workspaces, neither visible from the other", async () => {
        const a = identity({ externalId: "shared" });
        const b = identity({ externalId: "shared", workspaceId: wsB });
        expect((await store.insertIdentity(a)).created).toBe(true);
        expect((await store.insertIdentity(b)).created).toBe(true);
        expect((await store.findIdentity(wsA, "shared"))?.id).toBe(a.id);
        expect((await store.findIdentity(wsB, "shared"))?.id).toBe(b.id);
        expect(await store.findIdentity(wsB, a.id)).toBeUndefined();
        expect(await store.findIdentitiesByIds(wsB, [a.id])).toEqual([]);
        expect(await store.updateIdentity(wsB, a.id, { meta: "{}", updatedAt: 5 })).toBeUndefined();
        expect(await store.deleteIdentity(wsB, a.id)).toBe(false);
        expect((await store.findIdentity(wsA, a.id))?.meta).toBeNull();
      });

      it("prefers the id when one identity's externalId is another's id", async () => {
        const a = identity();
        const b = identity({ externalId: a.id });
        await store.insertIdentity(a);
        await store.insertIdentity(b);
        expect((await store.findIdentity(wsA, a.id))?.id).toBe(a.id);
      });

      it("finds identities by ids, leaving out the missing ones", async () => {
        const a = identity({ ratelimits: [limit("x")] });
        const b = identity();
        await store.insertIdentity(a);
        await store.insertIdentity(b);
        const found = await store.findIdentitiesByIds(wsA, [a.id, "id_nope", b.id]);
        expect(found.map((i) => i.id).sort()).toEqual([a.id, b.id].sort());
        expect(found.find((i) => i.id === a.id)?.ratelimits).toEqual(a.ratelimits);
        expect(await store.findIdentitiesByIds(wsA, [])).toEqual([]);
      });

      it("pages identities by id in byte order and filters by a case-insensitive substring of id or externalId", async () => {
        const recs = [
          identity({ externalId: "Alice" }),
          identity({ externalId: "bob" }),
          identity({ externalId: "carol" }),
        ];
        for (const r of recs) await store.insertIdentity(r);
        const ids = recs.map((r) => r.id).sort((x, y) => (x < y ? -1 : 1));
        const first = await store.listIdentities(wsA, { limit: 2 });
        expect(first.map((i) => i.id)).toEqual(ids.slice(0, 2));
        const rest = await store.listIdentities(wsA, { limit: 2, after: first[1]!.id });
        expect(rest.map((i) => i.id)).toEqual(ids.slice(2));
        expect(
          (await store.listIdentities(wsA, { limit: 10, search: "ALI" })).map((i) => i.externalId),
        ).toEqual(["Alice"]);
        const bySomeId = recs[1]!.id.slice(3, 10).toLowerCase();
        expect((await store.listIdentities(wsA, { limit: 10, search: bySomeId })).map((i) => i.id)).toContain(
          recs[1]!.id,
        );
        expect(await store.listIdentities(wsB, { limit: 10 })).toEqual([]);
      });

      it("replaces the limit set on update: a name that stays keeps its id, others go, new ones come", async () => {
        const keep = limit("keep", { limit: 1 });
        const rec = identity({ ratelimits: [keep, limit("drop")] });
        await store.insertIdentity(rec);
        const added = limit("added", { autoApply: true });
        const updated = await store.updateIdentity(wsA, rec.id, {
          ratelimits: [{ ...keep, id: newId("rl"), limit: 99, duration: 2_000, autoApply: true }, added],
          updatedAt: 7_000,
        });
        expect(updated?.ratelimits).toEqual([
          added,
          { ...keep, limit: 99, duration: 2_000, autoApply: true },
        ]);
        expect(updated?.updatedAt).toBe(7_000);
        expect((await store.findIdentity(wsA, rec.id))?.ratelimits).toEqual(updated?.ratelimits);
      });

      it("keeps the limits when the update leaves them out and clears them with an empty set", async () => {
        const rec = identity({ ratelimits: [limit("a")], meta: JSON.stringify({ a: 1 }) });
        await store.insertIdentity(rec);
        const metaOnly = await store.updateIdentity(wsA, rec.id, {
          meta: JSON.stringify({ b: 2 }),
          updatedAt: 2,
        });
        expect(metaOnly?.ratelimits).toEqual(rec.ratelimits);
        expect(metaOf(metaOnly)).toEqual({ b: 2 });
        const cleared = await store.updateIdentity(wsA, rec.id, { ratelimits: [], updatedAt: 3 });
        expect(cleared?.ratelimits).toEqual([]);
        expect(metaOf(cleared)).toEqual({ b: 2 });
      });

      it("stores the IP allow-list, keeps it when an update leaves it out, replaces and clears it", async () => {
        const rec = identity({ ipAllowList: ["203.0.113.0/24", "2001:db8::/32"] });
        await store.insertIdentity(rec);
        expect((await store.findIdentity(wsA, rec.id))?.ipAllowList).toEqual([
          "203.0.113.0/24",
          "2001:db8::/32",
        ]);
        const metaOnly = await store.updateIdentity(wsA, rec.id, { meta: "{}", updatedAt: 2 });
        expect(metaOnly?.ipAllowList).toEqual(["203.0.113.0/24", "2001:db8::/32"]);
        const replaced = await store.updateIdentity(wsA, rec.id, { ipAllowList: ["10.0.0.1"], updatedAt: 3 });
        expect(replaced?.ipAllowList).toEqual(["10.0.0.1"]);
        expect((await store.findIdentitiesByIds(wsA, [rec.id]))[0]?.ipAllowList).toEqual(["10.0.0.1"]);
        expect(await store.updateIdentity(wsB, rec.id, { ipAllowList: [], updatedAt: 4 })).toBeUndefined();
        const cleared = await store.updateIdentity(wsA, rec.id, { ipAllowList: [], updatedAt: 5 });
        expect(cleared?.ipAllowList).toEqual([]);
        expect(
          (await store.listIdentities(wsA, { limit: 10 })).find((i) => i.id === rec.id)?.ipAllowList,
        ).toEqual([]);
      });

      it("deletes an identity for good, and its externalId can be used again", async () => {
        const rec = identity({ ratelimits: [limit("a")] });
        await store.insertIdentity(rec);
        expect(await store.deleteIdentity(wsA, rec.id)).toBe(true);
        expect(await store.deleteIdentity(wsA, rec.id)).toBe(false);
        expect(await store.findIdentity(wsA, rec.externalId)).toBeUndefined();
        const again = identity({ externalId: rec.externalId, ratelimits: [limit("a")] });
        expect((await store.insertIdentity(again)).created).toBe(true);
      });
    });

    describe("permissions", () => {
      it("inserts a permission once per slug and finds it by id and by slug", async () => {
        const p = permission("documents.read", { name: "Read documents", description: "Reads them" });
        expect(await store.insertPermission(p)).toBe(true);
        expect(await store.insertPermission(permission("documents.read"))).toBe(false);
        expect(await store.findPermission(wsA, p.id)).toEqual(p);
        expect(await store.findPermission(wsA, "documents.read")).toEqual(p);
        expect(await store.findPermission(wsB, p.id)).toBeUndefined();
        expect(await store.insertPermission(permission("documents.read", { workspaceId: wsB }))).toBe(true);
      });

      it("ensures permissions: existing slugs answer their record, missing ones are inserted, in candidate order", async () => {
        const existing = permission("a");
        await store.insertPermission(existing);
        const fresh = permission("b");
        const ensured = await store.ensurePermissions(wsA, [fresh, permission("a")]);
        expect(ensured).toEqual([fresh, existing]);
        expect(await store.findPermission(wsA, "b")).toEqual(fresh);
        const bySlugs = await store.findPermissionsBySlugs(wsA, ["a", "b", "c"]);
        expect(bySlugs.map((p) => p.slug).sort()).toEqual(["a", "b"]);
        expect(await store.findPermissionsBySlugs(wsB, ["a"])).toEqual([]);
      });

      it("pages permissions by id and searches id, name, slug and description", async () => {
        const ps = [
          permission("documents.read", { name: "Reader" }),
          permission("billing.write", { description: "Writes INVOICES" }),
          permission("x"),
        ];
        for (const p of ps) await store.insertPermission(p);
        const ids = ps.map((p) => p.id).sort((x, y) => (x < y ? -1 : 1));
        const page1 = await store.listPermissions(wsA, { limit: 2 });
        expect(page1.map((p) => p.id)).toEqual(ids.slice(0, 2));
        expect((await store.listPermissions(wsA, { limit: 2, after: ids[1]! })).map((p) => p.id)).toEqual([
          ids[2],
        ]);
        expect((await store.listPermissions(wsA, { limit: 9, search: "reader" })).map((p) => p.slug)).toEqual(
          ["documents.read"],
        );
        expect(
          (await store.listPermissions(wsA, { limit: 9, search: "invoices" })).map((p) => p.slug),
        ).toEqual(["billing.write"]);
        expect(
          (await store.listPermissions(wsA, { limit: 9, search: "DOCUMENTS." })).map((p) => p.slug),
        ).toEqual(["documents.read"]);
      });

      it("deletes a permission and takes it out of every role", async () => {
        const p = permission("a");
        const role1 = await store.insertRole(role("r"), [p, permission("b")]);
        expect(await store.deletePermission(wsA, p.id)).toBe(true);
        expect(await store.deletePermission(wsA, p.id)).toBe(false);
        expect((await store.findRole(wsA, role1!.id))?.permissions.map((x) => x.slug)).toEqual(["b"]);
      });

      it("does not delete another workspace's permission", async () => {
        const p = permission("a");
        await store.insertPermission(p);
        expect(await store.deletePermission(wsB, p.id)).toBe(false);
        expect(await store.findPermission(wsA, p.id)).toEqual(p);
      });
    });

    describe("roles", () => {
      it("inserts a role with its permissions ordered by slug, creating missing ones, and finds it by id and by name", async () => {
        const existing = permission("z.read");
        await store.insertPermission(existing);
        const r = role("admin", { description: "All of it" });
        const fresh = permission("a.write");
        const inserted = await store.insertRole(r, [permission("z.read"), fresh]);
        expect(inserted).toEqual({ ...r, permissions: [fresh, existing] });
        expect(await store.findRole(wsA, r.id)).toEqual(inserted);
        expect(await store.findRole(wsA, "admin")).toEqual(inserted);
        expect(await store.findRole(wsB, r.id)).toBeUndefined();
      });

      it("refuses a second role of the same name and creates none of its permissions", async () => {
        await store.insertRole(role("admin"), []);
        expect(await store.insertRole(role("admin"), [permission("new.one")])).toBeUndefined();
        expect(await store.findPermission(wsA, "new.one")).toBeUndefined();
        expect(await store.insertRole(role("admin", { workspaceId: wsB }), [])).toBeDefined();
      });

      it("finds roles by names, leaving out the missing ones", async () => {
        await store.insertRole(role("a"), [permission("p1")]);
        await store.insertRole(role("b"), []);
        const found = await store.findRolesByNames(wsA, ["a", "nope", "b"]);
        expect(found.map((r) => [r.name, r.permissions.map((p) => p.slug)]).sort()).toEqual([
          ["a", ["p1"]],
          ["b", []],
        ]);
        expect(await store.findRolesByNames(wsB, ["a"])).toEqual([]);
      });

      it("replaces a role's permissions atomically and clears them with an empty set", async () => {
        const r = await store.insertRole(role("r"), [permission("a"), permission("b")]);
        const set = await store.setRolePermissions(wsA, r!.id, [permission("c"), permission("b")]);
        expect(set?.map((p) => p.slug)).toEqual(["b", "c"]);
        expect((await store.findRole(wsA, r!.id))?.permissions).toEqual(set);
        expect(await store.setRolePermissions(wsA, r!.id, [])).toEqual([]);
        expect((await store.findRole(wsA, r!.id))?.permissions).toEqual([]);
        // The permissions themselves stay.
        expect(await store.findPermission(wsA, "a")).toBeDefined();
      });

      it("answers undefined when setting permissions of a missing or foreign role, creating nothing", async () => {
        const r = await store.insertRole(role("r"), []);
        expect(await store.setRolePermissions(wsA, "role_nope", [permission("x")])).toBeUndefined();
        expect(
          await store.setRolePermissions(wsB, r!.id, [permission("y", { workspaceId: wsB })]),
        ).toBeUndefined();
        expect(await store.findPermission(wsA, "x")).toBeUndefined();
        expect(await store.findPermission(wsB, "y")).toBeUndefined();
      });

      it("pages roles by id and searches id, name and description", async () => {
        const rs = [role("admin"), role("reader", { description: "Reads ADMIN stuff" }), role("writer")];
        for (const r of rs) await store.insertRole(r, []);
        const ids = rs.map((r) => r.id).sort((x, y) => (x < y ? -1 : 1));
        expect((await store.listRoles(wsA, { limit: 2 })).map((r) => r.id)).toEqual(ids.slice(0, 2));
        expect((await store.listRoles(wsA, { limit: 2, after: ids[1]! })).map((r) => r.id)).toEqual([ids[2]]);
        expect((await store.listRoles(wsA, { limit: 9, search: "admin" })).map((r) => r.name).sort()).toEqual(
          ["admin", "reader"],
        );
        expect(await store.listRoles(wsB, { limit: 9 })).toEqual([]);
      });

      it("deletes a role and keeps its permissions", async () => {
        const r = await store.insertRole(role("r"), [permission("a")]);
        expect(await store.deleteRole(wsB, r!.id)).toBe(false);
        expect(await store.deleteRole(wsA, r!.id)).toBe(true);
        expect(await store.deleteRole(wsA, r!.id)).toBe(false);
        expect(await store.findRole(wsA, "r")).toBeUndefined();
        expect(await store.findPermission(wsA, "a")).toBeDefined();
      });
    });
  });
}
