import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("portal.* answering 400 before any call", () => {
  const h = harness({ portal: {} });
  it.each([
    ["portal.createSession", { portal: "acme", externalId: "u", scopes: [] }, "/body/scopes"],
    ["portal.createSession", { portal: "acme", externalId: "u", scopes: ["keys:delete"] }, "/body/scopes/0"],
    [
      "portal.createSession",
      { portal: "acme", externalId: "u", scopes: ["keys:read", "keys:read"] },
      "/body/scopes",
    ],
    ["portal.createSession", { portal: "ac", externalId: "u", scopes: ["keys:read"] }, "/body/portal"],
    ["portal.createSession", { portal: "acme", externalId: "", scopes: ["keys:read"] }, "/body/externalId"],
    [
      "portal.createSession",
      { portal: "acme", externalId: "u", scopes: ["keys:read"], returnUrl: "x".repeat(501) },
      "/body/returnUrl",
    ],
    ["portal.exchangeCode", { code: "" }, "/body/code"],
    ["portal.exchangeCode", {}, "/body/code"],
    ["portal.rerollKey", { keyId: "key_1" }, "/body/expiration"],
    ["portal.rerollKey", { keyId: "key_1", expiration: -1 }, "/body/expiration"],
    ["portal.getVerifications", { startTime: 1 }, "/body/endTime"],
    ["portal.listKeys", { limit: 0 }, "/body/limit"],
    ["portal.createKey", { name: "" }, "/body/name"],
    ["portal.getSession", { extra: 1 }, "/body/extra"],
  ] as const)("%s %j: 400 at %s", async (operation, body, location) => {
    const res = await h.post(operation, body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toContain(location);
  });
});
