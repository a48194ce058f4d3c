import { describe, expect, it } from "vitest";
import { blockedAddress } from "./url-safety.ts";

describe("blockedAddress", () => {
  it.each([
    ["::7f00:1", "::7f00:1 is a deprecated IPv4-compatible IPv6 address"],
    // Written with its IPv4 tail, ipaddr.js reads it as that IPv4 address.
    ["::127.0.0.1", "::127.0.0.1 is a loopback address"],
    ["::a9fe:a9fe", "::a9fe:a9fe is a deprecated IPv4-compatible IPv6 address"],
    ["::2", "::2 is a deprecated IPv4-compatible IPv6 address"],
    ["fec0::1", "fec0::1 is a site-local (deprecated) address"],
    ["feff::1", "feff::1 is a site-local (deprecated) address"],
    ["::1", "::1 is a loopback address"],
    ["::", ":: is a unspecified address"],
    ["::ffff:127.0.0.1", "::ffff:127.0.0.1 is a loopback address"],
    ["fe80::1", "fe80::1 is a link-local address"],
  ])("refuses %s", (address, why) => {
    expect(blockedAddress(address)).toBe(why);
  });

  it.each(["2606:4700::1111", "1.1.1.1", "::1:0:0:1", "fe00::1"])(
    "lets the public address %s pass",
    (address) => {
      expect(blockedAddress(address)).toBeUndefined();
    },
  );
});
