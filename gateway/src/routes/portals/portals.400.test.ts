import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("portals.* answering 400 before any call", () => {
  const h = harness({ portal: {} });
  it.each([
    ["portals.createPortal", { name: "x" }, "/body/apiId"],
    ["portals.createPortal", { apiId: "api_1", name: "" }, "/body/name"],
    ["portals.createPortal", { apiId: "api_1", name: "x", slug: "a b" }, "/body/slug"],
    ["portals.createPortal", { apiId: "api_1", name: "x", slug: "ab" }, "/body/slug"],
    ["portals.createPortal", { apiId: "api_1", name: "x", sessionTtlMs: 86_400_001 }, "/body/sessionTtlMs"],
    ["portals.createPortal", { apiId: "api_1", name: "x", sessionTtlMs: 59_999 }, "/body/sessionTtlMs"],
    [
      "portals.createPortal",
      { apiId: "api_1", name: "x", branding: { accentColor: "red" } },
      "/body/branding/accentColor",
    ],
    [
      "portals.createPortal",
      { apiId: "api_1", name: "x", branding: { font: "Comic" } },
      "/body/branding/font",
    ],
    ["portals.getPortal", {}, "/body/portalId"],
    ["portals.updatePortal", { portalId: "portal_1", name: "" }, "/body/name"],
    ["portals.listPortals", { limit: 101 }, "/body/limit"],
    ["portals.revokeSession", { sessionId: "ps 1" }, "/body/sessionId"],
  ] as const)("%s %j: 400 at %s", async (operation, body, location) => {
    const res = await h.post(operation, body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toContain(location);
  });
});
