import ipaddr from "ipaddr.js";

/**
 * Where a request came from, as its HTTP server saw it. Read only when a root key must be looked
 * up (auth.ts), never for a cached one.
 */
export interface RequestOrigin {
  /** The TCP peer's address, as node:net reports it; none for a request made in process. */
  readonly peer?: string | undefined;
  /** The X-Forwarded-For field, its lines joined with ", " in order. */
  readonly forwardedFor?: string | undefined;
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * The proxies whose X-Forwarded-For is believed (TRUSTED_PROXIES: addresses and CIDRs,
 * comma-separated), and the client behind a request. X-Forwarded-For is read only when the peer
 * itself is trusted, and walked from the right: each trusted proxy appends the address it saw, so
 * the first address from the right that is not a trusted proxy is the client; what lies left of it
 * is the client's own say and is never believed. With no trusted proxy, the peer is the client.
 */
export class TrustedProxies {
  private constructor(private readonly ranges: readonly [Address, number][]) {}

  static readonly none = new TrustedProxies([]);

  /** Parses TRUSTED_PROXIES; a bad entry throws, naming it. */
  static parse(setting: string | undefined): TrustedProxies {
    if (setting === undefined || setting.trim() === "") return TrustedProxies.none;
    const ranges = setting
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== "")
      .map((entry): [Address, number] => {
        try {
          if (entry.includes("/")) {
            const [address, bits] = ipaddr.parseCIDR(entry);
            return address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()
              ? [(address as ipaddr.IPv6).toIPv4Address(), Math.max(0, bits - 96)]
              : [address, bits];
          }
          const address = strictAddress(entry);
          if (address === undefined) throw new Error("not an address");
          return [address, address.kind() === "ipv4" ? 32 : 128];
        } catch {
          throw new Error(
            `TRUSTED_PROXIES must list IP addresses and CIDRs (e.g. 10.0.0.0/8,2001:db8::/32), comma-separated; '${entry}' is neither`,
          );
        }
      });
    return new TrustedProxies(ranges);
  }

  get trustsAny(): boolean {
    return this.ranges.length > 0;
  }

  /**
   * The key the client's budget is kept under: its IPv4 address, or its IPv6 /64 (one host commonly
   * holds a whole /64, so a single address would be no bound); undefined when the peer is unknown.
   */
  clientOf(origin: RequestOrigin): string | undefined {
    const client = this.client(origin);
    return client === undefined ? undefined : keyOf(client);
  }

  /**
   * The client's address itself (an IPv4 one, or an IPv6 one in its short form), by the same walk as
   * clientOf; undefined when the peer is unknown. Forward-auth's client address (forward-auth/).
   */
  addressOf(origin: RequestOrigin): string | undefined {
    return this.client(origin)?.toString();
  }

  /** Whether the peer is one of the trusted proxies. */
  trustsPeer(peer: string | undefined): boolean {
    const address = peer === undefined ? undefined : strictAddress(peer);
    return address !== undefined && this.trusts(address);
  }

  private client(origin: RequestOrigin): Address | undefined {
    const peer = origin.peer === undefined ? undefined : strictAddress(origin.peer);
    if (peer === undefined) return undefined;
    let client = peer;
    if (this.ranges.length > 0 && origin.forwardedFor !== undefined && this.trusts(peer)) {
      const hops = origin.forwardedFor.split(",");
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = strictAddress(withoutPort(hops[i]!.trim()));
        // A hop no proxy could have written: the trusted proxy nearest it is as far as is known.
        if (hop === undefined) break;
        client = hop;
        if (!this.trusts(hop)) break;
      }
    }
    return client;
  }

  private trusts(address: Address): boolean {
    for (const [range, bits] of this.ranges) {
      if (range.kind() === address.kind() && address.match(range, bits)) return true;
    }
    return false;
  }
}

/**
 * An IPv4 address in four-part decimal or an IPv6 address (an IPv4-mapped one as its IPv4
 * address); anything else, such as ipaddr's lenient `127.1` or `0x7f000001`, is undefined.
 */
function strictAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const v6 = ipaddr.IPv6.parse(text);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
}

/** `1.2.3.4:80` and `[2001:db8::1]:80`, as some proxies write them, without the port. */
function withoutPort(hop: string): string {
  if (hop.startsWith("[")) {
    const end = hop.indexOf("]");
    return end === -1 ? hop : hop.slice(1, end);
  }
  const colon = hop.indexOf(":");
  return colon !== -1 && colon === hop.lastIndexOf(":") ? hop.slice(0, colon) : hop;
}

function keyOf(address: Address): string {
  if (address.kind() === "ipv4") return address.toString();
  const parts = (address as ipaddr.IPv6).parts;
  return `${parts[0]!.toString(16)}:${parts[1]!.toString(16)}:${parts[2]!.toString(16)}:${parts[3]!.toString(16)}::/64`;
}
