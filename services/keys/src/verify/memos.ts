import { create } from "@bufbuild/protobuf";
import { type KeyIdentity, KeyIdentitySchema, type VerifyKeyResponse } from "@latchkey/proto/keys/v1/keys_pb";
import { evaluatePermissionQuery, type PermissionQuery } from "@latchkey/runtime";
import type { CachedKey } from "../store/keys-store.ts";
import { type Segments, segmentsOf } from "./batch-wire.ts";
import type { Grants, ResolvedIdentity } from "./identity-cache.ts";
import type { KeyCache } from "./key-cache.ts";
import { PermissionQueries } from "./permission-queries.ts";

/** Most verdicts remembered per key's grants: a key is asked few distinct queries. */
const MAX_VERDICTS = 32;

/** A memo of segments besides their bytes: the memo, two arrays and their buffers. */
const SEGMENTS_BYTES = 320;

/**
 * What verification works out once and reuses: parsed permission queries, a
 * query's verdict against a key's grants, an identity's answer, a key's
 * pre-encoded answer segments. One per keys service instance (KeysDeps.verification),
 * living as long as it does; each entry is held weakly by the cached record it
 * was made from (a key, its grants, an identity), so it goes when the cache
 * drops that record, and its bytes are counted with the key in the key cache.
 */
export class VerificationMemos {
  /** Queries asked on every verification are parsed once. */
  readonly queries = new PermissionQueries();
  /** Verdicts of queries (parsed once, so each text is one object) against each grants, shared while both are. */
  private readonly verdicts = new WeakMap<Grants, Map<PermissionQuery, boolean>>();
  /** Each cached identity's answer, made once and shared (create() takes a message as it is). */
  private readonly identityMessages = new WeakMap<ResolvedIdentity, KeyIdentity>();
  /** Each cached key's pre-encoded segments, with the grants and identity they were made with. */
  private readonly segmentsOfKey = new WeakMap<
    CachedKey,
    { grants: Grants; identity: ResolvedIdentity | null; segments: Segments }
  >();

  constructor(private readonly keyCache: KeyCache) {}

  /** Whether `grants` (of `key`) satisfy `query`. */
  granted(key: CachedKey, query: PermissionQuery, grants: Grants): boolean {
    let known = this.verdicts.get(grants);
    const hit = known?.get(query);
    if (hit !== undefined) return hit;
    const verdict = evaluatePermissionQuery(query, grants.held);
    if (known === undefined) {
      known = new Map();
      this.verdicts.set(grants, known);
    }
    if (known.size < MAX_VERDICTS) {
      known.set(query, verdict);
      // They live as long as the key's grants: counted with its cached record (once per new verdict).
      this.keyCache.charge(key, "verdicts", 96 + 64 * known.size);
    }
    return verdict;
  }

  identityMessage(identity: ResolvedIdentity): KeyIdentity {
    let message = this.identityMessages.get(identity);
    if (message === undefined) {
      message = create(KeyIdentitySchema, {
        id: identity.id,
        externalId: identity.externalId,
        metaJson: identity.metaJson,
        ratelimits: identity.ratelimits.map((r) => ({
          id: r.id,
          name: r.name,
          limit: BigInt(r.limit),
          duration: BigInt(r.duration),
          autoApply: r.autoApply,
        })),
      });
      this.identityMessages.set(identity, message);
    }
    return message;
  }

  /**
   * The segments of an answer that come from its key, grants and identity
   * (batch-wire.ts), encoded once per cached key and identity.
   */
  segments(
    facts: { key: CachedKey; grants: Grants; identity: ResolvedIdentity | null },
    result: VerifyKeyResponse,
  ): Segments {
    const memo = this.segmentsOfKey.get(facts.key);
    if (memo !== undefined && memo.grants === facts.grants && memo.identity === facts.identity) {
      return memo.segments;
    }
    const segments = segmentsOf(result);
    this.segmentsOfKey.set(facts.key, { grants: facts.grants, identity: facts.identity, segments });
    this.keyCache.charge(
      facts.key,
      "segments",
      SEGMENTS_BYTES + segments.before.byteLength + segments.after.byteLength,
    );
    return segments;
  }
}
