import { fromBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { type Bus, type Clock, ErrorReason, errorDetailOf, hashKey, OldestFirst } from "@latchkey/runtime";
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

export interface RootKeyAuthOptions {
  /** How long a resolved root key is trusted without asking again. */
  ttlMs: number;
  /** How long an unknown root key is remembered as unknown (short: it may be created any moment). */
  unknownTtlMs?: number;
  /** Most root keys held at once; the oldest resolved leaves first. Default 10,000. */
  maxEntries?: number;
  /** Most unknown tokens remembered at once, apart from the known ones; the oldest leaves first. Default 100,000. */
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
 */
export class RootKeyAuth {
  private readonly known = new Map<string, Known>();
  private readonly oldestKnown = new OldestFirst(this.known);
  /**
   * Authorization header -> hash of its key, for known root keys only, so a
   * repeated header costs one Map lookup instead of parsing and SHA-256.
   */
  private readonly hashes = new Map<string, string>();
  private readonly oldestHeader = new OldestFirst(this.hashes);
  /** Hash of an unknown token -> until when it is answered unknown without asking. */
  private readonly unknown = new Map<string, number>();
  private readonly oldestUnknown = new OldestFirst(this.unknown);
  private readonly pending = new Map<string, Promise<Caller | null>>();
  /** Lookups of new tokens out, and those waiting for one to return (FIFO). */
  private lookupsOut = 0;
  private readonly waiting: (() => void)[] = [];
  /** The lookups that may start now (a token bucket refilled at lookupsPerSecond), and when it was last filled. */
  private lookupBudget: number;
  private budgetAt: number;
  private readonly ttlMs: number;
  private readonly unknownTtlMs: number;
  private readonly maxEntries: number;
  private readonly maxUnknown: number;
  private readonly maxLookups: number;
  private readonly maxWaiting: number;
  private readonly lookupsPerSecond: number;
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
   * when new tokens are being looked up faster than the bounds allow. Else a promise, rejected
   * with a 401 when the lookup does not know the key. Throwing rather than rejecting keeps a flood
   * of bogus keys off the promise machinery.
   */
  authenticate(header: string | undefined): Promise<Caller> {
    let hash = header === undefined ? undefined : this.hashes.get(header);
    if (hash === undefined) {
      const token = bearerOf(header);
      if (!couldBeRootKey(token)) throw problems.unknownRootKey();
      hash = hashKey(token);
    }
    const now = this.clock.now();
    const entry = this.known.get(hash);
    if (entry !== undefined && entry.expiresAt > now) return Promise.resolve(entry.caller);
    const unknownUntil = this.unknown.get(hash);
    if (unknownUntil !== undefined && unknownUntil > now) throw problems.unknownRootKey();
    let p = this.pending.get(hash);
    if (p === undefined) {
      // A known key whose TTL ran out is asked about beside the bounds for new tokens.
      const key = hash;
      p = (entry !== undefined ? this.lookup(key) : this.boundedLookup(key, this.admit(now))).finally(() =>
        this.pending.delete(key),
      );
      this.pending.set(key, p);
    }
    return p.then((caller) => {
      if (caller === null) throw problems.unknownRootKey();
      if (header !== undefined && !this.hashes.has(header)) {
        this.oldestHeader.trim(this.maxEntries - 1);
        this.hashes.set(header, hash);
      }
      return caller;
    });
  }

  close(): void {
    this.unsubscribe();
    this.known.clear();
    this.hashes.clear();
    this.unknown.clear();
  }

  /**
   * Whether a new token may be looked up now: throws authBusy past lookupsPerSecond, or when
   * maxLookups are out and maxWaiting wait; answers whether it must wait for a slot.
   */
  private admit(now: number): boolean {
    this.lookupBudget = Math.min(
      this.lookupsPerSecond,
      this.lookupBudget + ((now - this.budgetAt) * this.lookupsPerSecond) / 1_000,
    );
    this.budgetAt = now;
    if (this.lookupBudget < 1) throw problems.authBusy();
    if (this.lookupsOut < this.maxLookups) {
      this.lookupsOut++;
      this.lookupBudget--;
      return false;
    }
    if (this.waiting.length >= this.maxWaiting) throw problems.authBusy();
    this.lookupBudget--;
    return true;
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
      this.oldestUnknown.trim(this.maxUnknown - 1);
      this.unknown.delete(hash);
      this.unknown.set(hash, now + this.unknownTtlMs);
    } else {
      this.unknown.delete(hash);
      this.oldestKnown.trim(this.maxEntries - 1);
      this.known.delete(hash);
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
    for (const [hash, entry] of this.known) {
      if (entry.caller.rootKeyId === changed.keyId) this.known.delete(hash);
    }
  }
}

/** Whether `token` has the length and characters a root key has (see ROOT_KEY_MIN_LENGTH). */
export function couldBeRootKey(token: string): boolean {
  return (
    token.length >= ROOT_KEY_MIN_LENGTH && token.length <= ROOT_KEY_MAX_LENGTH && VISIBLE_ASCII.test(token)
  );
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
