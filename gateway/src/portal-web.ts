import type { Clock } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import type { RequestOrigin, TrustedProxies } from "./client-address.ts";
import { problems } from "./problem.ts";
import type { WebRequest } from "./route.ts";
import { ClientRate } from "./routes/leaks/client-rate.ts";

/** The portal session's cookie: set by portal.exchangeCode, read by the session's calls (docs/portal.md). */
export const SESSION_COOKIE = "portal_session";

/** exchangeCode attempts one client may make in a burst, and how many it gets back a minute. */
export const EXCHANGE_BURST = 10;
export const EXCHANGES_PER_MINUTE = 10;
/** Clients whose exchange budgets are kept; the least recently seen leaves first (refilled by then). */
const MAX_CLIENTS = 10_000;

const HOST = /^[A-Za-z0-9.\-:[\]]{1,255}$/;

/**
 * What the portal's routes read of a request (gateway.ts, Exchange): its fields by lower-case name
 * (Cookie, Origin, Sec-Fetch-Site, Host, X-Forwarded-Proto and -Host), read only on their routes.
 */
export interface PortalRequestFields extends RequestOrigin {
  header?(name: string): string | undefined;
}

type Exchange = PortalRequestFields;

/**
 * What the portal's routes, and the others served without a root key, read of the HTTP request
 * beyond the body: the public origin portal URLs and the same-origin check use, the session cookie,
 * its fields, and each client's budgets of code exchanges and of leak reports.
 */
export class PortalWeb {
  private readonly publicUrl: URL | undefined;
  private readonly budgets = new LRUCache<string, { left: number; at: number }>({ max: MAX_CLIENTS });
  /** keys.reportLeak per client, this gateway's (routes/leaks). */
  private readonly leakReports = new ClientRate();

  constructor(
    publicUrl: string | undefined,
    private readonly proxies: TrustedProxies,
    private readonly clock: Clock,
    private readonly budget = { burst: EXCHANGE_BURST, perMinute: EXCHANGES_PER_MINUTE },
  ) {
    this.publicUrl =
      publicUrl === undefined || publicUrl.trim() === "" ? undefined : parsePublicUrl(publicUrl);
  }

  /** The request's side as a portal route, or another served without a root key, sees it. */
  request(x: Exchange, sessionToken: string | undefined): WebRequest {
    return {
      header: (name) => x.header?.(name),
      takeLeakReport: () => {
        const client = this.proxies.clientOf(x);
        return client === undefined || this.leakReports.take(client, this.clock.now());
      },
      sessionToken,
      publicOrigin: () => this.publicOrigin(x),
      sessionCookie: (token, expiresAt) =>
        setSessionCookie(token, (expiresAt - this.clock.now()) / 1000, this.secure(x)),
      clearedCookie: () => setSessionCookie("", 0, this.secure(x)),
      spendExchange: () => this.spendExchange(this.proxies.clientOf(x)),
    };
  }

  /**
   * The deployment's public base: PUBLIC_URL (without its trailing slash), or the request's own
   * origin, its scheme and host taken from X-Forwarded-Proto and X-Forwarded-Host only when a
   * trusted proxy (TRUSTED_PROXIES) sent it.
   */
  publicOrigin(x: Exchange): string {
    if (this.publicUrl !== undefined) return this.publicUrl.href.replace(/\/$/, "");
    const trusted = this.proxies.trustsPeer(x.peer);
    const proto = (trusted ? firstOf(x.header?.("x-forwarded-proto")) : undefined)?.toLowerCase();
    const forwardedHost = trusted ? firstOf(x.header?.("x-forwarded-host")) : undefined;
    const host =
      [forwardedHost, x.header?.("host")?.trim()].find((h) => h !== undefined && HOST.test(h)) ?? "localhost";
    return `${proto === "https" ? "https" : "http"}://${host}`;
  }

  /**
   * A state-changing call carried by a cookie must come from the portal's own page: a browser says
   * where a request comes from in Sec-Fetch-Site (every current one) or Origin (every one, on a
   * cross-origin POST), and either must say same origin. A request with neither is no browser's (a
   * backend with Unkey's SDK): no page can have made it, so there is nothing to forge.
   */
  sameOrigin(x: Exchange): boolean {
    const site = x.header?.("sec-fetch-site");
    if (site !== undefined) return site.trim().toLowerCase() === "same-origin";
    const origin = x.header?.("origin");
    if (origin === undefined) return true;
    return origin.trim() === new URL(this.publicOrigin(x)).origin;
  }

  /** Whether the session cookie is sent over https only (Secure): when the public origin is https. */
  secure(x: Exchange): boolean {
    return this.publicOrigin(x).startsWith("https://");
  }

  /** Takes one exchange attempt from the client's budget; throws 429 once it is spent. */
  spendExchange(client: string | undefined): void {
    // In process (npm start's tests, no socket) there is no client to tell apart: one budget.
    const key = client ?? "in-process";
    const now = this.clock.now();
    const { burst, perMinute } = this.budget;
    const b = this.budgets.get(key) ?? { left: burst, at: now };
    b.left = Math.min(burst, b.left + ((now - b.at) * perMinute) / 60_000);
    b.at = now;
    if (b.left < 1) {
      this.budgets.set(key, b);
      throw problems.tooManyExchanges(Math.ceil(((1 - b.left) * 60_000) / perMinute / 1000));
    }
    b.left -= 1;
    this.budgets.set(key, b);
  }
}

/** The portal_session cookie's value in a Cookie header, or undefined. */
export function sessionCookie(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  // "; " between pairs; ", " too, where two Cookie fields were joined as other fields are.
  for (const part of header.split(/[;,]/)) {
    const eq = part.indexOf("=");
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    return value === "" ? undefined : value;
  }
  return undefined;
}

/** Set-Cookie for a session token (or its removal, with `maxAgeSeconds` 0). */
export function setSessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Max-Age=${Math.max(0, Math.round(maxAgeSeconds))}; Path=/; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`;
}

/** PUBLIC_URL: an absolute http or https URL with no query or fragment; anything else stops the start, naming it. */
export function parsePublicUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new Error(
      `PUBLIC_URL must be an absolute http or https URL (e.g. https://keys.example.com); got '${value}'`,
    );
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.search !== "" ||
    url.hash !== "" ||
    url.username !== ""
  ) {
    throw new Error(
      `PUBLIC_URL must be an http or https URL without credentials, query or fragment (e.g. https://keys.example.com); got '${value}'`,
    );
  }
  return url;
}

const firstOf = (value: string | undefined) => value?.split(",")[0]?.trim() || undefined;
