import { describe, expect, it } from "vitest";
import { AllowList, clientAddress, MAX_ALLOW_LIST_ENTRIES, validAllowList } from "./allow-list.ts";

const allows = (list: AllowList | null, address: string) => list!.allows(clientAddress(address)!);

describe("IP allow-lists", () => {
  it("hold IPv4 and IPv6 CIDRs and bare addresses", () => {
    const list = AllowList.of(["203.0.113.0/24", "198.51.100.7", "2001:db8::/32", "::1"]);
    expect(allows(list, "203.0.113.200")).toBe(true);
    expect(allows(list, "203.0.114.1")).toBe(false);
    expect(allows(list, "198.51.100.7")).toBe(true);
    expect(allows(list, "198.51.100.8")).toBe(false);
    expect(allows(list, "2001:db8:ffff::1")).toBe(true);
    expect(allows(list, "2001:db9::1")).toBe(false);
    expect(allows(list, "::1")).toBe(true);
    // An IPv4-mapped IPv6 address is the IPv4 it carries, both ways.
    expect(allows(list, "::ffff:203.0.113.9")).toBe(true);
    expect(allows(AllowList.of(["::ffff:10.0.0.0/104"]), "10.1.2.3")).toBe(true);
  });

  it("allow an address only when every list given holds it (the API's, then the key's)", () => {
    const both = AllowList.of(["10.0.0.0/8"], ["10.1.0.0/16"]);
    expect(allows(both, "10.1.2.3")).toBe(true);
    expect(allows(both, "10.2.0.1")).toBe(false);
    expect(allows(AllowList.of([], ["10.1.0.0/16"]), "10.1.0.1")).toBe(true);
    expect(AllowList.of([], null, undefined)).toBeNull();
    // A list of IPv4 only refuses every IPv6 address.
    expect(allows(AllowList.of(["0.0.0.0/0"]), "2001:db8::1")).toBe(false);
  });

  it("read a verifier's address as ipaddr.js reads it, in every IPv6 spelling", async () => {
    const ipaddr = (await import("ipaddr.js")).default;
    const spellings = [
      "::",
      "::1",
      "1::",
      "2001:db8::9",
      "2001:db8:0:0:1:0:0:1",
      "2001:DB8::A:b",
      "fe80::1%eth0",
      "::ffff:203.0.113.9",
      "64:ff9b::192.0.2.33",
      "1:2:3:4:5:6:7:8",
      "1:2:3:4:5:6:77.77.88.88",
      "0.0.0.0",
      "255.255.255.255",
    ];
    for (const text of spellings) {
      const expected = ipaddr.process(text.replace(/%.*/, ""));
      expect([text, clientAddress(text)?.toNormalizedString()]).toEqual([
        text,
        expected.toNormalizedString(),
      ]);
    }
  });

  it("read only plain addresses from a verifier", () => {
    expect(clientAddress("203.0.113.7")?.toString()).toBe("203.0.113.7");
    for (const bad of ["10.1", "0x0a.0.0.1", "localhost", "203.0.113.7/32", "", "1.2.3.4.5"]) {
      expect(clientAddress(bad)).toBeUndefined();
    }
  });

  it("are checked when written, naming the entry to fix", () => {
    expect(validAllowList(["10.0.0.0/8", "10.0.0.0/8", "::1"], "/ipAllowList")).toEqual([
      "10.0.0.0/8",
      "::1",
    ]);
    const refusal = (entries: string[]) => {
      try {
        validAllowList(entries, "/ipAllowList");
      } catch (err) {
        return (err as { rawMessage: string }).rawMessage;
      }
      return "accepted";
    };
    expect(refusal(["10.0.0.0/8", "10.0.0.0/33"])).toBe("'10.0.0.0/33' is neither an IP address nor a CIDR");
    expect(refusal(["example.com"])).toBe("'example.com' is neither an IP address nor a CIDR");
    expect(refusal(["10.1"])).toBe("'10.1' is neither an IP address nor a CIDR");
    expect(refusal(["10.1/8"])).toBe("'10.1/8' is neither an IP address nor a CIDR");
    expect(refusal(Array.from({ length: MAX_ALLOW_LIST_ENTRIES + 1 }, (_, i) => `10.0.0.${i % 250}`))).toBe(
      `an IP allow-list holds at most ${MAX_ALLOW_LIST_ENTRIES} entries`,
    );
  });
});
