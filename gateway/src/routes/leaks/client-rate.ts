import { LRUCache } from "lru-cache";

/** Leak reports one client may make per minute, and at once after a quiet minute (docs/limits.md). */
export const LEAK_REPORTS_PER_MINUTE = 10;
/** Clients whose budgets are kept; the least recently seen is forgotten (and starts full again). */
const MAX_CLIENTS = 10_000;

/**
 * Each client's budget of keys.reportLeak calls: a token bucket per client address (an IPv4
 * address or an IPv6 /64, as TrustedProxies.clientOf names it), so that no one client can fill the
 * keys service's queue of reports (services/keys/src/leaks/leak-queue.ts) ahead of others.
 */
export class ClientRate {
  private readonly clients = new LRUCache<string, { tokens: number; at: number }>({ max: MAX_CLIENTS });

  constructor(private readonly perMinute = LEAK_REPORTS_PER_MINUTE) {}

  /** Takes one report from `client`'s budget at `now`; false when it has none left. */
  take(client: string, now: number): boolean {
    const kept = this.clients.get(client);
    const tokens =
      kept === undefined
        ? this.perMinute
        : Math.min(this.perMinute, kept.tokens + ((now - kept.at) * this.perMinute) / 60_000);
    if (tokens < 1) {
      if (kept !== undefined) Object.assign(kept, { tokens, at: now });
      return false;
    }
    this.clients.set(client, { tokens: tokens - 1, at: now });
    return true;
  }
}
