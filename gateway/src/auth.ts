import { fromBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { type Bus, type Clock, ErrorReason, errorDetailOf, hashKey, OldestFirst } from "@latchkey/runtime";
import { problems } from "./problem.ts";

/** Subject on which the keys service announces changed keys, APIs and root keys. */
export const KEYS_CHANGED_SUBJECT = "events.keys.changed";

export interface RootKeyAuthOptions {
  /** How long a resolved root key is trusted without asking again. */
  ttlMs: number;
  /** How long an unknown root key is remembered as unknown (short: it may be created any moment). */
  unknownTtlMs?: number;
  /** Most root keys held at once; the oldest entry leaves first. */
  maxEntries?: number;
}

interface Entry {
  caller: Caller | null;
  expiresAt: number;
}

/**
 * Resolves `Authorization: Bearer <root key>` to its Caller. Resolutions are
 * cached by the key's hash so that on the hot path auth is one SHA-256 and
 * one Map lookup; concurrent misses for one key share a single RPC. A change
 * announced on the bus drops the entry at once, so a revoked root key stops
 * working before its TTL runs out.
 */
export class RootKeyAuth {
  private readonly entries = new Map<string, Entry>();
  private readonly oldest = new OldestFirst(this.entries);
  /**
   * Authorization header -> hash of its key, so a repeated header costs one
   * Map lookup instead of parsing and SHA-256. It holds what every request
   * carries anyway, in this process only, and is bounded like `entries`.
   */
  private readonly hashes = new Map<string, string>();
  private readonly pending = new Map<string, Promise<Caller | null>>();
  private readonly ttlMs: number;
  private readonly unknownTtlMs: number;
  private readonly maxEntries: number;
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
    const entry = this.entries.get(hash);
    if (entry === undefined || entry.caller === null || entry.expiresAt <= this.clock.now()) return undefined;
    return entry.caller;
  }

  /** The caller behind an Authorization header; throws a 401 Problem for a missing, malformed or unknown key. */
  async authenticate(header: string | undefined): Promise<Caller> {
    const hash = this.hashOf(header);
    const entry = this.entries.get(hash);
    const caller =
      entry !== undefined && entry.expiresAt > this.clock.now() ? entry.caller : await this.resolve(hash);
    if (caller === null) throw problems.unknownRootKey();
    return caller;
  }

  private hashOf(header: string | undefined): string {
    let hash = header === undefined ? undefined : this.hashes.get(header);
    if (hash === undefined) {
      hash = hashKey(bearerOf(header));
      if (this.hashes.size >= this.maxEntries) this.hashes.clear();
      this.hashes.set(header!, hash);
    }
    return hash;
  }

  close(): void {
    this.unsubscribe();
    this.entries.clear();
    this.hashes.clear();
  }

  private resolve(hash: string): Promise<Caller | null> {
    let p = this.pending.get(hash);
    if (p === undefined) {
      p = this.lookup(hash).finally(() => this.pending.delete(hash));
      this.pending.set(hash, p);
    }
    return p;
  }

  private async lookup(hash: string): Promise<Caller | null> {
    let caller: Caller | null;
    try {
      caller = (await this.keys.authenticateRootKey({ hash })).caller ?? null;
    } catch (err) {
      if (!isUnknownKey(err)) throw err;
      caller = null;
    }
    this.oldest.trim(this.maxEntries - 1);
    this.entries.delete(hash);
    this.entries.set(hash, {
      caller,
      expiresAt: this.clock.now() + (caller === null ? this.unknownTtlMs : this.ttlMs),
    });
    return caller;
  }

  private onKeyChanged(data: Uint8Array) {
    let changed: { hash: string; keyId: string };
    try {
      changed = fromBinary(KeyChangedSchema, data);
    } catch {
      return;
    }
    if (changed.hash !== "") this.entries.delete(changed.hash);
    if (changed.keyId === "") return;
    for (const [hash, entry] of this.entries) {
      if (entry.caller?.rootKeyId === changed.keyId) this.entries.delete(hash);
    }
  }
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
