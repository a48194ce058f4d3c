import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/** Longest URL a webhook may have (docs/limits.md). */
export const MAX_URL_LENGTH = 2048;

/**
 * Why an address may not be delivered to, or undefined when it is a public unicast address.
 * Classified by ipaddr.js: an IPv4-mapped IPv6 address is judged as the IPv4 address it maps, and
 * anything that is not plain public unicast is refused: loopback, private (RFC 1918, fc00::/7),
 * link-local (169.254/16 with the cloud metadata address, fe80::/10), unspecified, carrier-grade
 * NAT (100.64/10), multicast, broadcast, reserved, the IPv6 ranges that embed IPv4 addresses
 * (IPv4-compatible ::/96 included) and the deprecated site-local fec0::/10.
 */
export function blockedAddress(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return `'${address}' is not an IP address`;
  }
  const range = parsed.range();
  if (range !== "unicast") return `${address} is a ${RANGE_NAMES[range] ?? `${range}`} address`;
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    const refused = REFUSED_V6.find(([net]) => v6.match(net));
    if (refused) return `${address} is a ${refused[1]} address`;
  }
  return undefined;
}

/**
 * IPv6 ranges ipaddr.js may call unicast that reach what the IPv4 or site rules refuse:
 * IPv4-compatible ::/96 (`[::127.0.0.1]`, which the URL parser writes `[::7f00:1]`) and the
 * deprecated site-local fec0::/10, refused whatever the library's version calls them.
 */
const REFUSED_V6: [[ipaddr.IPv6, number], string][] = [
  [ipaddr.IPv6.parseCIDR("::/96"), "deprecated IPv4-compatible IPv6"],
  [ipaddr.IPv6.parseCIDR("fec0::/10"), "site-local (deprecated)"],
];

const RANGE_NAMES: Record<string, string> = {
  loopback: "loopback",
  private: "private",
  uniqueLocal: "private (unique local)",
  linkLocal: "link-local",
  unspecified: "unspecified",
  carrierGradeNat: "carrier-grade NAT",
  multicast: "multicast",
  broadcast: "broadcast",
  reserved: "reserved",
  deprecatedSiteLocal: "site-local (deprecated)",
};

/** The URL's host as an IP address when it is one (IPv6 without its brackets), else undefined. */
export function literalAddress(url: URL): string | undefined {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) ? host : undefined;
}

/** Why a webhook URL is refused at create or update, or undefined when it is acceptable. */
export function urlProblem(text: string, allowPrivate: boolean): string | undefined {
  if (text.length > MAX_URL_LENGTH)
    return `url must be at most ${MAX_URL_LENGTH} characters, got ${text.length}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "url must be an absolute http:// or https:// URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return `url must use http or https, not ${url.protocol.slice(0, -1)}`;
  }
  if (url.username !== "" || url.password !== "") {
    return "url must not carry credentials (user:password@): authenticate the receiver with the signature";
  }
  const literal = literalAddress(url);
  if (literal !== undefined && !allowPrivate) {
    const why = blockedAddress(literal);
    if (why) return `url points at ${why}: webhooks are delivered only to public addresses`;
  }
  return undefined;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** Raised by safeLookup: the message says which address was refused and why. */
export class BlockedAddressError extends Error {
  readonly code = "WEBHOOK_BLOCKED_ADDRESS";
}

/**
 * A `lookup` for node:http's request: resolves the host and refuses it when any of its addresses
 * is blocked, so the socket connects to exactly the addresses judged here: a DNS answer that
 * changes between a check and the connection (rebinding) cannot slip through, because there is no
 * second resolution.
 */
export function safeLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const list = addresses as LookupAddress[];
    for (const a of list) {
      const why = blockedAddress(a.address);
      if (why) {
        return callback(
          new BlockedAddressError(`refused: ${hostname} resolves to ${why}; nothing was sent`),
          [],
        );
      }
    }
    if (list.length === 0)
      return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), []);
    if (options.all) return callback(null, list);
    callback(null, list[0]!.address, list[0]!.family);
  });
}
