import type { RequestOrigin, TrustedProxies } from "../client-address.ts";
import type { Policy } from "./policy.ts";

/** Where forward-auth is served; Envoy appends the original path to it (path_prefix). */
export const FORWARD_AUTH_PATH = "/forward-auth";

/** The header the proxy's root key travels in: Authorization is the client's (its key may be there). */
export const ROOT_KEY_HEADER = "x-latchkey-root-key";

/**
 * What forward-auth reads of the proxy's request and how it answers: the part of gateway.ts's
 * Exchange it uses (named here, so that gateway.ts alone imports the other).
 */
export interface Exchange extends RequestOrigin {
  readonly method: string;
  readonly authorization: string | undefined;
  header?(name: string): string | undefined;
  reply(status: number, contentType: string, body: string, headers?: Readonly<Record<string, string>>): void;
}

/** The request the proxy is asking about, as it reports it. */
export interface OriginalRequest {
  method: string;
  host: string;
  /** The path without its query. */
  path: string;
  /** The query, without its `?`; "" when none. */
  query: string;
}

/**
 * The original request by each proxy's convention: nginx's `X-Original-Method`, `X-Original-URI`
 * and `X-Original-Host` (set in deploy/edge/nginx.conf); Caddy's and Traefik's
 * `X-Forwarded-Method`, `-Uri` and `-Host`; else Envoy's, which asks with the original method and
 * host and the original path after FORWARD_AUTH_PATH.
 */
export function originalRequest(x: Exchange, url: string): OriginalRequest {
  const header = x.header!.bind(x);
  const method = header("x-original-method") ?? header("x-forwarded-method") ?? x.method;
  const host = header("x-original-host") ?? header("x-forwarded-host") ?? header("host") ?? "";
  let uri = header("x-original-uri") ?? header("x-forwarded-uri");
  if (uri === undefined) {
    uri = url.slice(FORWARD_AUTH_PATH.length);
    if (!uri.startsWith("/")) uri = `/${uri}`;
  }
  const q = uri.indexOf("?");
  return {
    method: method.toUpperCase(),
    host,
    path: normalizedPath(q === -1 ? uri : uri.slice(0, q)),
    query: q === -1 ? "" : uri.slice(q + 1),
  };
}

/**
 * The path as an upstream is likely to read it, which is what policies must match: nginx's
 * `$request_uri` and Caddy's `X-Forwarded-Uri` are the raw target, and `/public/../admin`,
 * `/%61dmin` or `//admin` would otherwise slip past a policy on `/admin/**` to a weaker one.
 * Percent-escapes are decoded (an escaped `/` separates too), empty and `.` segments dropped, `..`
 * taken back.
 */
export function normalizedPath(raw: string): string {
  let decoded = raw;
  if (raw.includes("%")) {
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      // A broken escape: matched as written; upstreams refuse such a path or read it as written.
      decoded = raw;
    }
  }
  if (!decoded.includes("//") && !decoded.includes("/."))
    return decoded.startsWith("/") ? decoded : `/${decoded}`;
  const out: string[] = [];
  for (const segment of decoded.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  const trailing = decoded.endsWith("/") && out.length > 0 ? "/" : "";
  return `/${out.join("/")}${trailing}`;
}

/**
 * The client's address as the proxy reports it: the proxy is believed only when TRUSTED_PROXIES
 * names it, and then its X-Forwarded-For is walked as for the root-key budgets
 * (client-address.ts), X-Real-IP standing in for a proxy that sends only that. A proxy that is not
 * trusted, or reports nothing, gives its own address: a key with an IP allow-list is then refused
 * (the proxy is not its client), never let through unchecked.
 */
export function clientAddressOf(x: Exchange, trusted: TrustedProxies): string | undefined {
  const forwardedFor = x.forwardedFor ?? x.header!("x-real-ip");
  return trusted.addressOf({ peer: x.peer, forwardedFor });
}

/** The client's key where the policy says it is; undefined when absent or empty. */
export function keyOf(x: Exchange, policy: Policy, request: OriginalRequest): string | undefined {
  const where = policy.key;
  if (where === undefined || where.from === "bearer") return bearerOf(x.authorization);
  const name = where.name!;
  switch (where.from) {
    case "header":
      return nonEmpty(x.header!(name.toLowerCase()));
    case "query":
      return nonEmpty(queryParam(request.query, name));
    case "cookie":
      return nonEmpty(cookieOf(x.header!("cookie"), name));
  }
}

function bearerOf(header: string | undefined): string | undefined {
  if (header === undefined || header.length < 8) return undefined;
  if (header.slice(0, 7).toLowerCase() !== "bearer ") return undefined;
  return nonEmpty(header.slice(7).trim());
}

const nonEmpty = (s: string | undefined) => (s === undefined || s === "" ? undefined : s);

function queryParam(query: string, name: string): string | undefined {
  if (query === "") return undefined;
  try {
    return new URLSearchParams(query).get(name) ?? undefined;
  } catch {
    return undefined;
  }
}

function cookieOf(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  // Cookie pairs are split by "; " (node:http joins repeated Cookie fields the same way).
  for (const pair of header.split(/;\s*|,\s*/)) {
    const eq = pair.indexOf("=");
    if (eq > 0 && pair.slice(0, eq).trim() === name) {
      const value = pair.slice(eq + 1).trim();
      return value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
    }
  }
  return undefined;
}
