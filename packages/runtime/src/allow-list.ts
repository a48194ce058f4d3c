import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { invalidInput } from "./errors.ts";

/** Most CIDRs one allow-list (an API's, a key's, an identity's) may hold (docs/limits.md). */
export const MAX_ALLOW_LIST_ENTRIES = 100;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * An IP allow-list, parsed: the CIDRs (IPv4 and IPv6; a bare address is its /32 or /128) a key may
 * be verified from. Parsed once per cached key (the store builds it with the key's record), never per
 * verification; an IPv4-mapped IPv6 address (::ffff:203.0.113.7) is matched as the IPv4 it carries.
 */
export class AllowList {
  private constructor(
    /** Each list given, all of which must allow an address: an API's, a key's, an identity's. */
    private readonly lists: readonly Ranges[],
  ) {}

  /** The lists given that hold entries, all of which must allow an address; null when none does. */
  static of(...lists: readonly (readonly string[] | null | undefined)[]): AllowList | null {
    const given = lists.filter((l): l is readonly string[] => l !== null && l !== undefined && l.length > 0);
    return given.length === 0 ? null : new AllowList(given.map(rangesOf));
  }

  /** How many ranges the lists hold together, for the caches that count the bytes they keep. */
  get size(): number {
    let n = 0;
    for (const l of this.lists) n += l.v4.length + l.v6.length;
    return n;
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

/**
 * The client address a verification gives, parsed once; undefined when it is not an IP address.
 * Node's isIP decides what is an address (dotted-quad IPv4 only: "10.1" is none), and the groups of a
 * valid one are read here: ipaddr.js's own parser costs several microseconds an IPv6 address, on the
 * verification path.
 */
export function clientAddress(text: string): Address | undefined {
  const family = isIP(text);
  if (family === 4) return new ipaddr.IPv4(text.split(".").map(Number));
  if (family !== 6) return undefined;
  const p = ipv6Parts(text);
  // ::ffff:a.b.c.d is the IPv4 it carries (ipaddr.js's isIPv4MappedAddress walks every special range).
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0xffff) {
    return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
  }
  return new ipaddr.IPv6(p);
}

/** The eight 16-bit groups of an address isIP found to be IPv6 (a zone is dropped, an IPv4 tail is two groups). */
function ipv6Parts(text: string): number[] {
  const zone = text.indexOf("%");
  const bare = zone === -1 ? text : text.slice(0, zone);
  const groups = (part: string): number[] => {
    if (part === "") return [];
    const out: number[] = [];
    for (const g of part.split(":")) {
      if (g.includes(".")) {
        const [a, b, c, d] = g.split(".").map(Number) as [number, number, number, number];
        out.push((a << 8) | b, (c << 8) | d);
      } else out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const gap = bare.indexOf("::");
  if (gap === -1) return groups(bare);
  const head = groups(bare.slice(0, gap));
  const tail = groups(bare.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
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
