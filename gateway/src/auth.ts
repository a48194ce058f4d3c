import { fromBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { type Bus, type Clock, ErrorReason, errorDetailOf, hashKey } from "@latchkey/runtime";
import bs58 from "bs58";
import { LRUCache } from "lru-cache";
import { type RequestOrigin, TrustedProxies } from "./client-address.ts";
import { problems } from "./problem.ts";

/** Subject on which the keys service announces changed keys, APIs and root keys. */
export const KEYS_CHANGED_SUBJECT = "events.keys.changed";

/**
 * What a root key can be: 16 (the shortest LATCHKEY_ROOT_KEY accepted, services/keys/src/admin.ts)
 * to 256 characters of visible ASCII (generated ones are lk_root_ and 32 or 33 of base58). Any
 * other token is unknown without asking.
 */
export const ROOT_KEY_MIN_LENGTH = 16;
export const ROOT_KEY_MAX_LENGTH = 256;
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
/** What services/keys/src/admin.ts puts before the base58 of a generated root key's 24 random bytes. */
const GENERATED_PREFIX = "lk_root_";
const GENERATED_BYTES = 24;

export interface RootKeyAuthOptions {
  /** How long a resolved root key is trusted without asking again. */
  ttlMs: number;
  /** How long an unknown root key is remembered as unknown (short: it may be created any moment). */
  unknownTtlMs?: number;
  /** Most root keys held at once; the least recently used leaves first. Default 10,000. */
  maxEntries?: number;
  /** Most unknown tokens remembered at once, apart from the known ones; the least recently asked leaves first. Default 100,000. */
  maxUnknown?: number;
  /** Lookups of tokens not known to be root keys out at once. Default 16. */
  maxLookups?: number;
  /** Lookups waiting for one of those; a token finding no room answers 503 at once. Default 1,000. */
  maxWaiting?: number;
  /**
   * Lookups of tokens not known to be root keys started per second, a second's worth at once at
   * most; past it a new token answers 503 at once. Default 100: new root keys are rare, and a
   * flood of distinct bogus ones would otherwise cost the keys service and its database one
   * lookup each.
   */
  lookupsPerSecond?: number;
  /**
   * Of lookupsPerSecond, the share kept for tokens of the shape Latchkey generates root keys in
   * (`isGeneratedShape`): other tokens may not take the budget below it. Default a fifth (20).
   */
  reservedLookups?: number;
  /**
   * Lookups of new tokens one client (an IPv4 address, an IPv6 /64) may start per second, a
   * second's worth at once; past it its new tokens answer 503 at once. Default 20.
   */
  clientLookupsPerSecond?: number;
  /**
   * Beyond its own budget, what one client may take per second of the reserved share, for tokens
   * of the generated shape only, a second's worth at once. Default 5.
   */
  clientReservedPerSecond?: number;
  /** Clients whose budgets are kept; the least recently seen leaves first (its budget refilled by then). Default 10,000. */
  maxClients?: number;
  /** Whose X-Forwarded-For names the client (TRUSTED_PROXIES); by default nobody's. */
  trustedProxies?: TrustedProxies;
}

/** One client's budgets: lookups of its own, and of the reserved share; and when they were last filled. */
interface ClientBudget {
  own: number;
  reserved: number;
  at: number;
}

interface Known {
  caller: Caller;
  expiresAt: number;
}

/**
 * Resolves `Authorization: Bearer <root key>` to its Caller. Resolutions are
 * cached by the key's hash so that on the hot path auth is one Map lookup
 * (the header maps to its hash); concurrent misses for one key share a single
 * RPC. A change announced on the bus drops the entry at once, so a revoked
 * root key stops working before its TTL runs out.
 *
 * Bogus tokens cannot crowd valid ones out: a token no root key can be is
 * refused without a lookup; an unknown one is remembered in a bounded map of
 * its own; and lookups of tokens not known before are bounded per second, out
 * and waiting, so a flood can neither queue unbounded RPCs nor load the keys
 * service with more than a hundred a second. A known root key whose
 * TTL ran out is asked about again beside those bounds (known keys are bounded
 * by maxEntries).
 *
 * That budget is not first come, first served, or one client's flood would
 * lock every new root key out: each client (TrustedProxies.clientOf) has a
 * budget of its own, a fifth of the whole; and a share of the whole is kept
 * for tokens of the shape Latchkey generates root keys in, which a client may
 * draw on, a little a second, once its own budget is spent. The shape is no
 * secret and anyone can forge it: what it buys is that a flood of any other
 * shape, however many its addresses, never reaches the reserve, and one of the
 * generated shape takes from it only its clients' small share each. Tokens of
 * other shapes (a LATCHKEY_ROOT_KEY of the operator's choosing) keep the
 * per-client budget. Only the lookup path reads the client: a cached root key
 * is still one Map lookup.
 */
export class RootKeyAuth {
  /** Resolved root keys by hash; one whose TTL ran out stays until asked about again (see authenticate). */
  private readonly known: LRUCache<string, Known>;
  /**
   * Authorization header -> hash of its key, for known root keys only, so a
   * repeated header costs one look-up instead of parsing and SHA-256.
   */
  private readonly hashes: LRUCache<string, string>;
  /** Hashes of unknown tokens, answered unknown without asking until unknownTtlMs has passed. */
  private readonly unknown: LRUCache<string, true>;
  private readonly pending = new Map<string, Promise<Caller | null>>();
  /** Lookups of new tokens out, and those waiting for one to return (FIFO). */
  private lookupsOut = 0;
  private readonly waiting: (() => void)[] = [];
  /** The lookups that may start now (a token bucket refilled at lookupsPerSecond), and when it was last filled. */
  private lookupBudget: number;
  private budgetAt: number;
  /** Each client's budgets, by clientOf's key; the least recently seen leaves first. */
  private readonly clients: LRUCache<string, ClientBudget>;
  private readonly ttlMs: number;
  private readonly unknownTtlMs: number;
  private readonly maxEntries: number;
  private readonly maxUnknown: number;
  private readonly maxLookups: number;
  private readonly maxWaiting: number;
  private readonly lookupsPerSecond: number;
  private readonly reservedLookups: number;
  private readonly clientLookupsPerSecond: number;
  private readonly clientReservedPerSecond: number;
  private readonly maxClients: number;
  private readonly trustedProxies: TrustedProxies;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly keys: Client<typeof KeysService>,
    private readonly clock: Clock,
    options: RootKeyAuthOptions,
    bus?: Bus,
  ) {
    this.ttlMs = options.ttlMs;
    this.unknownTtlMs = options.unknownTtlMs ?? Math.min(options.ttlMs, 1_000);
    this.maxEntries = options.maxEntries ?? 10_000;
    this.maxUnknown = options.maxUnknown ?? 100_000;
    this.maxLookups = options.maxLookups ?? 16;
    this.maxWaiting = options.maxWaiting ?? 1_000;
    this.lookupsPerSecond = options.lookupsPerSecond ?? 100;
    this.reservedLookups = options.reservedLookups ?? this.lookupsPerSecond / 5;
    this.clientLookupsPerSecond = options.clientLookupsPerSecond ?? 20;
    this.clientReservedPerSecond = options.clientReservedPerSecond ?? 5;
    this.maxClients = options.maxClients ?? 10_000;
    this.known = new LRUCache({ max: this.maxEntries });
    this.hashes = new LRUCache({ max: this.maxEntries });
    // Expiry by the injected clock, read on every look-up (ttlResolution 0), so tests can move it.
    this.unknown = new LRUCache({
      max: this.maxUnknown,
      ttl: this.unknownTtlMs,
      ttlResolution: 0,
      perf: { now: () => clock.now() },
    });
    this.clients = new LRUCache({ max: this.maxClients });
    this.trustedProxies = options.trustedProxies ?? TrustedProxies.none;
    this.lookupBudget = this.lookupsPerSecond;
    this.budgetAt = clock.now();
    this.unsubscribe = bus?.subscribe(KEYS_CHANGED_SUBJECT, (data) => this.onKeyChanged(data)) ?? (() => {});
  }

  /**
   * The caller behind an Authorization header when it is cached and fresh, so
   * the hot path needs no promise; undefined sends the caller to `authenticate`.
   */
  cached(header: string | undefined): Caller | undefined {
    if (header === undefined) return undefined;
    const hash = this.hashes.get(header);
    if (hash === undefined) return undefined;
    const entry = this.known.get(hash);
    if (entry === undefined || entry.expiresAt <= this.clock.now()) return undefined;
    return entry.caller;
  }

  /**
   * The caller behind an Authorization header. Throws a Problem at once when no lookup is needed
   * to refuse it: 401 for a missing, malformed or impossible key or one remembered as unknown, 503
   * when new tokens are being looked up faster than the bounds allow, the whole's or the client's.
   * Else a promise, rejected with a 401 when the lookup does not know the key. Throwing rather than
   * rejecting keeps a flood of bogus keys off the promise machinery. `origin` is read only when a
   * new token must be looked up; without one (a caller in process) only the whole budget binds.
   */
  authenticate(header: string | undefined, origin?: RequestOrigin): Promise<Caller> {
    let hash = header === undefined ? undefined : this.hashes.get(header);
    let token: string | undefined;
    if (hash === undefined) {
      token = bearerOf(header);
      if (!couldBeRootKey(token)) throw problems.unknownRootKey();
      hash = hashKey(token);
    }
    const now = this.clock.now();
    const entry = this.known.get(hash);
    if (entry !== undefined && entry.expiresAt > now) return Promise.resolve(entry.caller);
    if (this.unknown.get(hash) !== undefined) throw problems.unknownRootKey();
    let p = this.pending.get(hash);
    if (p === undefined) {
      // A known key whose TTL ran out is asked about beside the bounds for new tokens.
      const key = hash;
      p = (
        entry !== undefined
          ? this.lookup(key)
          : this.boundedLookup(key, this.admit(now, token ?? bearerOf(header), origin))
      ).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    return p.then((caller) => {
      if (caller === null) throw problems.unknownRootKey();
      if (header !== undefined && !this.hashes.has(header)) this.hashes.set(header, hash);
      return caller;
    });
  }

  /** How many clients have budgets kept: at most maxClients. */
  get clientsKept(): number {
    return this.clients.size;
  }

  close(): void {
    this.unsubscribe();
    this.known.clear();
    this.hashes.clear();
    this.unknown.clear();
    this.clients.clear();
  }

  /**
   * Whether a new token may be looked up now: throws authBusy past the whole budget (below the
   * reserve, for a token not of the generated shape), past its client's budget (and, for the
   * generated shape, the client's share of the reserve), or when maxLookups are out and maxWaiting
   * wait; answers whether it must wait for a slot. Nothing is charged unless it is let in.
   */
  private admit(now: number, token: string, origin: RequestOrigin | undefined): boolean {
    this.lookupBudget = Math.min(
      this.lookupsPerSecond,
      this.lookupBudget + ((now - this.budgetAt) * this.lookupsPerSecond) / 1_000,
    );
    this.budgetAt = now;
    const generated = isGeneratedShape(token);
    if (this.lookupBudget < 1 + (generated ? 0 : this.reservedLookups)) throw problems.authBusy();
    const key = origin === undefined ? undefined : this.trustedProxies.clientOf(origin);
    const client = key === undefined ? undefined : this.clientBudget(key, now);
    // Its own budget first; the reserve's share only for the generated shape, once that is spent.
    const fromReserve = client !== undefined && client.own < 1;
    if (fromReserve && !(generated && client.reserved >= 1)) throw problems.clientBusy();
    const wait = this.lookupsOut >= this.maxLookups;
    if (wait && this.waiting.length >= this.maxWaiting) throw problems.authBusy();
    this.lookupBudget--;
    if (!wait) this.lookupsOut++;
    if (client !== undefined && key !== undefined) {
      if (fromReserve) client.reserved--;
      else client.own--;
      // Kept only once charged, so addresses that were refused cost no memory.
      if (!this.clients.has(key)) this.clients.set(key, client);
    }
    return wait;
  }

  /**
   * The client's budgets, refilled to now, and marked as the most recently seen. A client not kept
   * starts full: one evicted as the least recently seen had had time to refill, since new clients
   * are kept only as fast as lookups are let in (maxClients at lookupsPerSecond: 100 s).
   */
  private clientBudget(key: string, now: number): ClientBudget {
    // get() marks it the most recently seen.
    const kept = this.clients.get(key);
    if (kept === undefined) {
      return { own: this.clientLookupsPerSecond, reserved: this.clientReservedPerSecond, at: now };
    }
    const elapsed = now - kept.at;
    kept.own = Math.min(
      this.clientLookupsPerSecond,
      kept.own + (elapsed * this.clientLookupsPerSecond) / 1_000,
    );
    kept.reserved = Math.min(
      this.clientReservedPerSecond,
      kept.reserved + (elapsed * this.clientReservedPerSecond) / 1_000,
    );
    kept.at = now;
    return kept;
  }

  /** A lookup of a new token that `admit` let in, holding its slot (or waiting for one) until it returns. */
  private async boundedLookup(hash: string, wait: boolean): Promise<Caller | null> {
    if (wait) await new Promise<void>((r) => this.waiting.push(r));
    try {
      return await this.lookup(hash);
    } finally {
      // The slot passes straight to the next waiting lookup, if any.
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.lookupsOut--;
    }
  }

  private async lookup(hash: string): Promise<Caller | null> {
    let caller: Caller | null;
    try {
      caller = (await this.keys.authenticateRootKey({ hash })).caller ?? null;
    } catch (err) {
      if (!isUnknownKey(err)) throw err;
      caller = null;
    }
    const now = this.clock.now();
    if (caller === null) {
      this.known.delete(hash);
      this.unknown.set(hash, true);
    } else {
      this.unknown.delete(hash);
      this.known.set(hash, { caller, expiresAt: now + this.ttlMs });
    }
    return caller;
  }

  private onKeyChanged(data: Uint8Array) {
    let changed: { hash: string; keyId: string };
    try {
      changed = fromBinary(KeyChangedSchema, data);
    } catch {
      return;
    }
    if (changed.hash !== "") {
      this.known.delete(changed.hash);
      this.unknown.delete(changed.hash);
    }
    if (changed.keyId === "") return;
    const revoked: string[] = [];
    for (const [hash, entry] of this.known.entries()) {
      if (entry.caller.rootKeyId === changed.keyId) revoked.push(hash);
    }
    for (const hash of revoked) this.known.delete(hash);
  }
}

/** Whether `token` has the length and characters a root key has (see ROOT_KEY_MIN_LENGTH). */
export function couldBeRootKey(token: string): boolean {
  return (
    token.length >= ROOT_KEY_MIN_LENGTH && token.length <= ROOT_KEY_MAX_LENGTH && VISIBLE_ASCII.test(token)
  );
}

/**
 * Whether `token` has the shape Latchkey generates root keys in (services/keys/src/admin.ts):
 * `lk_root_` and the base58 of exactly 24 bytes. Only the lookup path of a new token asks.
 */
export function isGeneratedShape(token: string): boolean {
  if (!token.startsWith(GENERATED_PREFIX)) return false;
  return bs58.decodeUnsafe(token.slice(GENERATED_PREFIX.length))?.length === GENERATED_BYTES;
}

function isUnknownKey(err: unknown): boolean {
  const reason = errorDetailOf(err)?.reason;
  if (reason !== undefined) return reason === ErrorReason.UNAUTHENTICATED;
  return err instanceof ConnectError && (err.code === Code.Unauthenticated || err.code === Code.NotFound);
}

/** The token of "Bearer <token>"; anything else is a 401 naming what is wrong. */
function bearerOf(header: string | undefined): string {
  if (header === undefined || header.trim() === "") throw problems.missingAuthorization();
  if (header.length < 8 || header.slice(0, 7).toLowerCase() !== "bearer ") {
    throw problems.malformedAuthorization();
  }
  const token = header.slice(7).trim();
  if (token === "" || /\s/.test(token)) throw problems.malformedAuthorization();
  return token;
}
