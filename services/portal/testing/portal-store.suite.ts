import { type AuditRecord, newId } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import type { PortalRecord, PortalStore, SessionRecord } from "../src/store/portal-store.ts";

const T = Date.UTC(2026, 0, 1);

const audit = (workspaceId: string, operation: string): AuditRecord => ({
  id: newId("audit"),
  workspaceId,
  time: T,
  actorType: "root_key",
  actorId: "rk_1",
  operation,
  resources: [],
  outcome: "success",
  errorCode: null,
  requestId: "",
  fields: [],
});

export const portalRecord = (workspaceId: string, fields: Partial<PortalRecord> = {}): PortalRecord => ({
  id: newId("portal"),
  workspaceId,
  apiId: "api_1",
  name: "Acme",
  slug: null,
  title: null,
  accentColor: null,
  logoUrl: null,
  sessionTtlMs: 3_600_000,
  createdAt: T,
  updatedAt: T,
  ...fields,
});

export const sessionRecord = (p: PortalRecord, fields: Partial<SessionRecord> = {}): SessionRecord => ({
  id: newId("ps"),
  workspaceId: p.workspaceId,
  portalId: p.id,
  externalId: "user_1",
  scopes: ["keys:read"],
  preview: false,
  encryptKey: false,
  rbacPermissions: [],
  returnUrl: null,
  codeHash: `code_${newId("c")}`,
  codeExpiresAt: T + 60_000,
  tokenHash: null,
  expiresAt: null,
  revokedAt: null,
  createdAt: T,
  ...fields,
});

/**
 * What every PortalStore does, run on the memory and the PostgreSQL store. Each test works in
 * workspaces of its own, so one database serves them all.
 */
export function portalStoreContract(name: string, make: () => PortalStore) {
  const ws = () => newId("ws");

  describe(`the ${name} portal store`, () => {
    it("creates, finds by id and slug, lists in id order, and keeps workspaces apart", async () => {
      const store = make();
      const [a, b] = [ws(), ws()];
      const p1 = portalRecord(a, { slug: "acme" });
      const p2 = portalRecord(a);
      expect(await store.createPortal(p1, 10, audit(a, "portals.createPortal"))).toBe("created");
      expect(await store.createPortal(p2, 10, audit(a, "portals.createPortal"))).toBe("created");
      expect(await store.createPortal(portalRecord(b, { slug: "acme" }), 10, audit(b, "x"))).toBe("created");
      expect(await store.findPortal(a, p1.id)).toEqual(p1);
      expect(await store.findPortal(b, p1.id)).toBeUndefined();
      expect((await store.findPortalBySlug(a, "acme"))?.id).toBe(p1.id);
      expect((await store.listPortals(a, { limit: 10, after: undefined })).map((p) => p.id)).toEqual(
        [p1.id, p2.id].sort(),
      );
      const [first] = [p1.id, p2.id].sort();
      expect((await store.listPortals(a, { limit: 10, after: first })).length).toBe(1);
      expect((await store.listAudit(a, { limit: 10 })).length).toBe(2);
    });

    it("refuses a taken slug and a portal past the bound, writing no record", async () => {
      const store = make();
      const a = ws();
      await store.createPortal(portalRecord(a, { slug: "acme" }), 2, audit(a, "c"));
      expect(await store.createPortal(portalRecord(a, { slug: "acme" }), 2, audit(a, "c"))).toBe(
        "slug taken",
      );
      await store.createPortal(portalRecord(a), 2, audit(a, "c"));
      expect(await store.createPortal(portalRecord(a), 2, audit(a, "c"))).toBe("full");
      expect((await store.listAudit(a, { limit: 10 })).length).toBe(2);
    });

    it("updates the fields given, removes a slug with null, refuses a taken one", async () => {
      const store = make();
      const a = ws();
      const p = portalRecord(a, { slug: "one" });
      const q = portalRecord(a, { slug: "two" });
      await store.createPortal(p, 10, audit(a, "c"));
      await store.createPortal(q, 10, audit(a, "c"));
      const branding = { title: "T", accentColor: "#000000", logoUrl: "https://x.example/l.png" };
      expect(
        await store.updatePortal(a, p.id, { name: "New", branding, updatedAt: T + 1 }, audit(a, "u")),
      ).toBe("updated");
      expect(await store.findPortal(a, p.id)).toEqual({ ...p, name: "New", ...branding, updatedAt: T + 1 });
      expect(await store.updatePortal(a, p.id, { slug: "two", updatedAt: T + 2 }, audit(a, "u"))).toBe(
        "slug taken",
      );
      expect(await store.updatePortal(a, p.id, { slug: null, updatedAt: T + 2 }, audit(a, "u"))).toBe(
        "updated",
      );
      expect((await store.findPortal(a, p.id))?.slug).toBeNull();
      expect(await store.updatePortal(ws(), p.id, { name: "x", updatedAt: T }, audit(a, "u"))).toBe(
        "missing",
      );
    });

    it("redeems a code once, before it expires, for a token that lasts the portal's sessionTtlMs", async () => {
      const store = make();
      const a = ws();
      const p = portalRecord(a, { sessionTtlMs: 600_000 });
      await store.createPortal(p, 10, audit(a, "c"));
      const rbacPermissions = ["rbac.*.add_role_to_key", "rbac.*.add_permission_to_key"];
      const s = sessionRecord(p, { codeHash: "h1", encryptKey: true, rbacPermissions });
      expect(await store.createSession(s, 10, T, audit(a, "s"))).toBe(true);
      expect(
        await store.redeemCode("h1", "tok1", T + 60_000, (x) => audit(x.workspaceId, "e")),
      ).toBeUndefined();
      const redeemed = await store.redeemCode("h1", "tok1", T + 1_000, (x) => audit(x.workspaceId, "e"));
      expect(redeemed).toMatchObject({
        id: s.id,
        tokenHash: "tok1",
        codeHash: null,
        expiresAt: T + 601_000,
        encryptKey: true,
        rbacPermissions,
      });
      expect(
        await store.redeemCode("h1", "tok2", T + 2_000, (x) => audit(x.workspaceId, "e")),
      ).toBeUndefined();
      expect(await store.sessionByToken("tok1")).toMatchObject({
        id: s.id,
        encryptKey: true,
        rbacPermissions,
      });
      expect(await store.sessionByToken("tok2")).toBeUndefined();
    });

    it("lets exactly one of concurrent exchanges of one code win", async () => {
      const store = make();
      const a = ws();
      const p = portalRecord(a);
      await store.createPortal(p, 10, audit(a, "c"));
      await store.createSession(sessionRecord(p, { codeHash: "race" }), 10, T, audit(a, "s"));
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          store.redeemCode("race", `tok_${i}`, T, (x) => audit(x.workspaceId, "e")),
        ),
      );
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      expect((await store.listAudit(a, { limit: 20 })).filter((r) => r.operation === "e")).toHaveLength(1);
    });

    it("counts live sessions against the bound, concurrent creations included, and revokes", async () => {
      const store = make();
      const a = ws();
      const p = portalRecord(a);
      await store.createPortal(p, 10, audit(a, "c"));
      const made = await Promise.all(
        Array.from({ length: 12 }, () => store.createSession(sessionRecord(p), 5, T, audit(a, "s"))),
      );
      expect(made.filter(Boolean)).toHaveLength(5);
      expect(await store.liveSessions(a, T)).toBe(5);
      // Codes unused past their minute no longer count.
      expect(await store.liveSessions(a, T + 60_000)).toBe(0);
      const s = sessionRecord(p, { codeExpiresAt: T + 120_000 });
      expect(await store.createSession(s, 5, T + 60_000, audit(a, "s"))).toBe(true);
      expect(await store.revokeSession(a, s.id, T + 60_001, audit(a, "r"))).toBe(true);
      expect(await store.revokeSession(a, s.id, T + 60_002, audit(a, "r"))).toBe(false);
      expect(await store.revokeSession(ws(), s.id, T + 60_002, audit(a, "r"))).toBe(false);
      expect(await store.liveSessions(a, T + 60_001)).toBe(0);
      expect((await store.findSession(a, s.id))?.revokedAt).toBe(T + 60_001);
    });

    it("prunes sessions dead a day when new ones are made, and deletes a portal's sessions with it", async () => {
      const store = make();
      const a = ws();
      const p = portalRecord(a);
      await store.createPortal(p, 10, audit(a, "c"));
      const old = sessionRecord(p);
      await store.createSession(old, 10, T, audit(a, "s"));
      await store.createSession(sessionRecord(p), 10, T + 60_000 + 86_400_001, audit(a, "s"));
      expect(await store.findSession(a, old.id)).toBeUndefined();
      const kept = sessionRecord(p, { codeHash: "kept", codeExpiresAt: T + 200_000_000 });
      await store.createSession(kept, 10, T + 100_000_000, audit(a, "s"));
      expect(await store.deletePortal(a, p.id, audit(a, "d"))).toBe(true);
      expect(await store.findSession(a, kept.id)).toBeUndefined();
      expect(await store.deletePortal(a, p.id, audit(a, "d"))).toBe(false);
    });
  });
}
