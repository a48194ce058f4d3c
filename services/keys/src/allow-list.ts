import { invalidInput } from "@latchkey/runtime";
import ipaddr from "ipaddr.js";

/** Most CIDRs one allow-list (an API's, a key's) may hold (docs/limits.md). */
export const MAX_ALLOW_LIST_ENTRIES = 100;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * An IP allow-list, parsed: the CIDRs (IPv4 and IPv6; a bare address is its /32 or /128) a key may
 * be verified from. Parsed once per cached key (the store builds it with the key's record), never per
 * verification; an IPv4-mapped IPv6 address (::ffff:203.0.113.7) is matched as the IPv4 it carries.
 */
export class AllowList {
  private constructor(
    /** Each list given, all of which must allow an address: an API's, then a key's. */
    private readonly lists: readonly Ranges[],
  ) {}

  /** The lists given that hold entries, all of which must allow an address; null when none does. */
  static of(...lists: readonly (readonly string[] | null | undefined)[]): AllowList | null {
    const given = lists.filter((l): l is readonly string[] => l !== null && l !== undefined && l.length > 0);
    return given.length === 0 ? null : new AllowList(given.map(rangesOf));
  }

  /** Whether `address` (parsed by clientAddress) is in every list. */
  allows(address: Address): boolean {
    const v4 = address.kind() === "ipv4";
    return this.lists.every((l) =>
      v4
        ? l.v4.some(([range, bits]) => (address as ipaddr.IPv4).match(range, bits))
        : l.v6.some(([range, bits]) => (address as ipaddr.IPv6).match(range, bits)),
    );
  }
}

interface Ranges {
  v4: [ipaddr.IPv4, number][];
  v6: [ipaddr.IPv6, number][];
}

function rangesOf(entries: readonly string[]): Ranges {
  const ranges: Ranges = { v4: [], v6: [] };
  for (const entry of entries) {
    const range = rangeOf(entry);
    // Stored lists were checked when written; one that no longer parses allows nothing.
    if (range === undefined) continue;
    const [address, bits] = range;
    if (address.kind() === "ipv4") ranges.v4.push([address as ipaddr.IPv4, bits]);
    else ranges.v6.push([address as ipaddr.IPv6, bits]);
  }
  return ranges;
}

/** The client address a verification gives, parsed once; undefined when it is not an IP address. */
export function clientAddress(text: string): Address | undefined {
  try {
    // Four-part decimal only: "10.1" or "0x0a.0.0.1" are addresses to ipaddr.js, never what was meant.
    if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
    if (!text.includes(":")) return undefined;
    const address = ipaddr.IPv6.parse(text);
    return address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
  } catch {
    return undefined;
  }
}

function rangeOf(entry: string): [Address, number] | undefined {
  try {
    if (entry.includes("/")) {
      if (clientAddress(entry.slice(0, entry.indexOf("/"))) === undefined) return undefined;
      const [address, bits] = ipaddr.parseCIDR(entry);
      return address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()
        ? [(address as ipaddr.IPv6).toIPv4Address(), Math.max(0, bits - 96)]
        : [address, bits];
    }
    const address = clientAddress(entry);
    return address === undefined ? undefined : [address, address.kind() === "ipv4" ? 32 : 128];
  } catch {
    return undefined;
  }
}

/**
 * An allow-list as a request gives it, checked: at most MAX_ALLOW_LIST_ENTRIES CIDRs or addresses,
 * each one that parses, kept in the order given without duplicates; `location` names the field.
 */
export function validAllowList(entries: readonly string[], location: string): string[] {
  if (entries.length > MAX_ALLOW_LIST_ENTRIES) {
    throw invalidInput(location, `an IP allow-list holds at most ${MAX_ALLOW_LIST_ENTRIES} entries`);
  }
  entries.forEach((entry, i) => {
    if (entry.length > 64 || rangeOf(entry) === undefined) {
      throw invalidInput(
        `${location}/${i}`,
        `'${entry.slice(0, 64)}' is neither an IP address nor a CIDR`,
        "Give IPv4 or IPv6 addresses and CIDRs, e.g. 203.0.113.0/24 or 2001:db8::/32.",
      );
    }
  });
  return [...new Set(entries)];
}
