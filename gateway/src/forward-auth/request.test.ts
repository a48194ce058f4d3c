import { describe, expect, it } from "vitest";
import { TrustedProxies } from "../client-address.ts";
import { clientAddressOf, type Exchange, normalizedPath } from "./request.ts";

const exchange = (peer: string, headers: Record<string, string>): Exchange => ({
  method: "GET",
  authorization: undefined,
  peer,
  forwardedFor: headers["x-forwarded-for"],
  header: (name) => headers[name],
  reply: () => {},
});

describe("the client's address as the proxy reports it", () => {
  const trusted = TrustedProxies.parse("10.0.0.0/8");

  it("believes a trusted proxy's X-Forwarded-For, walked from the right", () => {
    const x = exchange("10.0.0.2", { "x-forwarded-for": "198.51.100.1, 203.0.113.7, 10.0.0.9" });
    expect(clientAddressOf(x, trusted)).toBe("203.0.113.7");
  });

  it("takes X-Real-IP from a trusted proxy that sends only that", () => {
    expect(clientAddressOf(exchange("10.0.0.2", { "x-real-ip": "203.0.113.8" }), trusted)).toBe(
      "203.0.113.8",
    );
  });

  it("takes the proxy's own address when it is not trusted or names no client, so allow-lists fail closed", () => {
    expect(clientAddressOf(exchange("192.0.2.1", { "x-forwarded-for": "203.0.113.7" }), trusted)).toBe(
      "192.0.2.1",
    );
    expect(clientAddressOf(exchange("10.0.0.2", {}), trusted)).toBe("10.0.0.2");
    expect(
      clientAddressOf(exchange("10.0.0.2", { "x-forwarded-for": "203.0.113.7" }), TrustedProxies.none),
    ).toBe("10.0.0.2");
  });

  it("writes an IPv6 client in its short form", () => {
    const x = exchange("10.0.0.2", { "x-forwarded-for": "2001:db8:0:0:0:0:0:1" });
    expect(clientAddressOf(x, trusted)).toBe("2001:db8::1");
  });
});

describe("the path policies match", () => {
  it("is the path an upstream reads: escapes decoded, dot segments resolved, empty segments dropped", () => {
    expect(normalizedPath("/admin/users")).toBe("/admin/users");
    expect(normalizedPath("/public/../admin/users")).toBe("/admin/users");
    expect(normalizedPath("/%61dmin/users")).toBe("/admin/users");
    expect(normalizedPath("/public/%2e%2e/admin")).toBe("/admin");
    expect(normalizedPath("/admin%2Fusers")).toBe("/admin/users");
    expect(normalizedPath("//admin///users/")).toBe("/admin/users/");
    expect(normalizedPath("/./admin/./users")).toBe("/admin/users");
    expect(normalizedPath("/../../admin")).toBe("/admin");
    expect(normalizedPath("/a/%zz")).toBe("/a/%zz");
    expect(normalizedPath("/")).toBe("/");
  });
});
