import type {
  CreatePortalRequest,
  ListPortalsRequest,
  UpdatePortalRequest,
} from "@latchkey/proto/portal/v1/portal_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const portal = {
  id: "portal_1",
  apiId: "api_1",
  name: "Acme",
  slug: "acme",
  branding: { title: "Acme keys", accentColor: "#4f46e5" },
  sessionTtlMs: 3_600_000n,
  createdAt: 1n,
  updatedAt: 2n,
};

describe("portals.* answering 200", () => {
  it("createPortal forwards every field and answers the id", async () => {
    const seen: CreatePortalRequest[] = [];
    const h = harness({
      portal: {
        createPortal: (req) => {
          seen.push(req);
          return { portalId: "portal_1" };
        },
      },
    });
    const res = await h.post("portals.createPortal", {
      apiId: "api_1",
      name: "Acme",
      slug: "acme",
      branding: { title: "Acme keys", accentColor: "#4f46e5", logoUrl: "https://acme.example/logo.svg" },
      sessionTtlMs: 3_600_000,
    });
    expect([res.status, res.body.data]).toEqual([200, { portalId: "portal_1" }]);
    expect(seen.map((r) => [r.apiId, r.name, r.slug, r.branding?.logoUrl, r.sessionTtlMs])).toEqual([
      ["api_1", "Acme", "acme", "https://acme.example/logo.svg", 3_600_000n],
    ]);
    await h.post("portals.createPortal", { apiId: "api_1", name: "Bare" });
    expect([seen[1]?.slug, seen[1]?.branding, seen[1]?.sessionTtlMs]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("getPortal and listPortals answer the portal's fields, list with its page", async () => {
    const pages: ListPortalsRequest[] = [];
    const h = harness({
      portal: {
        getPortal: () => ({ portal }),
        listPortals: (req) => {
          pages.push(req);
          return {
            portals: [portal, { ...portal, slug: undefined, branding: {} }],
            page: { cursor: "portal_1", hasMore: true },
          };
        },
      },
    });
    const data = {
      portalId: "portal_1",
      apiId: "api_1",
      name: "Acme",
      slug: "acme",
      branding: { title: "Acme keys", accentColor: "#4f46e5" },
      sessionTtlMs: 3_600_000,
      createdAt: 1,
      updatedAt: 2,
    };
    expect((await h.post("portals.getPortal", { portalId: "portal_1" })).body.data).toEqual(data);
    const listed = await h.post("portals.listPortals", { limit: 2, cursor: "portal_0" });
    const { slug: _, ...bare } = data;
    expect(listed.body.data).toEqual([data, { ...bare, branding: {} }]);
    expect(listed.body.pagination).toEqual({ cursor: "portal_1", hasMore: true });
    expect(pages.map((p) => [p.page?.limit, p.page?.cursor])).toEqual([[2, "portal_0"]]);
  });

  it("updatePortal passes null slug as empty (removed) and leaves unsent fields unset", async () => {
    const seen: UpdatePortalRequest[] = [];
    const h = harness({
      portal: {
        updatePortal: (req) => {
          seen.push(req);
          return {};
        },
      },
    });
    expect((await h.post("portals.updatePortal", { portalId: "portal_1", slug: null })).body.data).toEqual(
      {},
    );
    await h.post("portals.updatePortal", { portalId: "portal_1", name: "New", sessionTtlMs: 60_000 });
    expect(seen.map((r) => [r.slug, r.name, r.sessionTtlMs, r.branding])).toEqual([
      ["", undefined, undefined, undefined],
      [undefined, "New", 60_000n, undefined],
    ]);
  });

  it("deletePortal and revokeSession answer {}", async () => {
    const h = harness({ portal: { deletePortal: () => ({}), revokeSession: () => ({}) } });
    expect((await h.post("portals.deletePortal", { portalId: "portal_1" })).body.data).toEqual({});
    expect((await h.post("portals.revokeSession", { sessionId: "ps_1" })).body.data).toEqual({});
  });
});
