import { describe, expect, it } from "vitest";
import { TrustedProxies } from "./client-address.ts";

describe("TrustedProxies", () => {
  const proxies = TrustedProxies.parse("10.0.0.0/8, 192.168.1.1 ,2001:db8:ffff::/48,::ffff:172.16.0.0/108");

  it.each([
    ["no X-Forwarded-For: the peer", "203.0.113.7", undefined, "203.0.113.7"],
    ["a peer not trusted: its X-Forwarded-For is ignored", "203.0.113.7", "198.51.100.1", "203.0.113.7"],
    ["a trusted peer: the hop it saw", "10.1.2.3", "198.51.100.1", "198.51.100.1"],
    ["what the client wrote left of it is not believed", "10.1.2.3", "1.1.1.1, 198.51.100.1", "198.51.100.1"],
    [
      "trusted hops are skipped from the right",
      "10.1.2.3",
      "9.9.9.9, 198.51.100.1, 192.168.1.1, 10.0.0.9",
      "198.51.100.1",
    ],
    ["every hop trusted: the farthest", "10.1.2.3", "10.0.0.1, 192.168.1.1", "10.0.0.1"],
    [
      "a hop no proxy writes: the trusted hop nearest it",
      "10.1.2.3",
      "198.51.100.1, garbage, 10.0.0.5",
      "10.0.0.5",
    ],
    ["an empty hop counts as garbage", "10.1.2.3", ", ", "10.1.2.3"],
    ["an address ipaddr reads leniently is garbage", "10.1.2.3", "127.1", "10.1.2.3"],
    ["ports are dropped", "10.1.2.3", "198.51.100.1:4711", "198.51.100.1"],
    ["an IPv6 hop with a port", "10.1.2.3", "[2001:db8:1:2::5]:443", "2001:db8:1:2::/64"],
    ["IPv6 clients are their /64", "10.1.2.3", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"],
    ["an IPv4-mapped peer is its IPv4 address", "::ffff:10.9.8.7", "198.51.100.1", "198.51.100.1"],
    ["an IPv4-mapped peer not trusted", "::ffff:203.0.113.7", "198.51.100.1", "203.0.113.7"],
    ["a mapped CIDR trusts the IPv4 range", "172.16.3.4", "198.51.100.1", "198.51.100.1"],
    ["a trusted IPv6 proxy", "2001:db8:ffff:1::1", "198.51.100.1", "198.51.100.1"],
    ["an IPv6 peer outside the trusted /48", "2001:db8:fffe::1", "198.51.100.1", "2001:db8:fffe:0::/64"],
    ["a single trusted address", "192.168.1.1", "198.51.100.2", "198.51.100.2"],
    ["its neighbour is not", "192.168.1.2", "198.51.100.2", "192.168.1.2"],
  ])("%s", (_, peer, forwardedFor, client) => {
    expect(proxies.clientOf({ peer, forwardedFor })).toBe(client);
  });

  it("believes no X-Forwarded-For when none is trusted, and keys an unknown peer as none", () => {
    const none = TrustedProxies.parse(undefined);
    expect(none.trustsAny).toBe(false);
    expect(TrustedProxies.parse(" ").trustsAny).toBe(false);
    expect(none.clientOf({ peer: "127.0.0.1", forwardedFor: "198.51.100.1" })).toBe("127.0.0.1");
    expect(none.clientOf({ peer: undefined, forwardedFor: "198.51.100.1" })).toBeUndefined();
  });

  it.each(["10.0.0.0/33", "example.com", "10.0.0", "10.0.0.1/8/2", "2001:db8::/129"])(
    "refuses TRUSTED_PROXIES=%s, naming the entry",
    (setting) => {
      expect(() => TrustedProxies.parse(`127.0.0.1,${setting}`)).toThrow(
        `TRUSTED_PROXIES must list IP addresses and CIDRs (e.g. 10.0.0.0/8,2001:db8::/32), comma-separated; '${setting}' is neither`,
      );
    },
  );
});
