import { fromBinary } from "@bufbuild/protobuf";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  ForwardAuthPoliciesChangedSchema,
  type ForwardAuthPolicy,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import type { Bus, Clock, Logger } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import { type Policy, type PolicyInput, PolicySet, type PolicySource, validatePolicySet } from "./policy.ts";

/** Subject on which the keys service announces that a workspace's policies changed. */
export const FORWARD_AUTH_POLICIES_CHANGED_SUBJECT = "events.keys.forward_auth_policies_changed";

/** How long compiled stored policies are trusted without word from the bus (docs/limits.md). */
export const STORED_POLICIES_TTL_MS = 10_000;

/** Most bytes counted for all workspaces' compiled policies in one gateway (docs/limits.md). */
export const STORED_POLICIES_MAX_BYTES = 32 * 1024 * 1024;

/** The request's policy: at once when it is known, else once the workspace's policies are loaded. */
export interface PolicyMatcher {
  match(
    caller: Caller,
    method: string,
    host: string,
    path: string,
  ): Policy | undefined | Promise<Policy | undefined>;
}

interface Entry {
  set: PolicySet;
  expiresAt: number;
}

/**
 * The forward-auth endpoint's policies: the file's (FORWARD_AUTH_POLICIES_FILE) first, read-only,
 * then the workspace's stored ones (forwardAuth.*Policy), then the default, the file's before the
 * stored one. A request the file matches costs no call. Stored policies are loaded once per
 * workspace, all at once (a workspace holds at most 100), compiled, and kept until the keys
 * service announces a change on the bus or STORED_POLICIES_TTL_MS passes; concurrent misses of
 * one workspace share one load. A workspace holds one entry, bounded by its count of policies and
 * their size, and all of them are bounded in bytes (least recently used first out).
 */
export class StoredPolicies implements PolicyMatcher {
  private readonly cache: LRUCache<string, Entry>;
  /** Loads under way, by workspace; a change drops its load, whose result is then not kept. */
  private readonly loading = new Map<string, Promise<PolicySet>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly file: PolicySource,
    private readonly load: (caller: Caller) => Promise<ForwardAuthPolicy[]>,
    private readonly options: { clock: Clock; log: Logger; bus?: Bus; ttlMs?: number; maxBytes?: number },
  ) {
    this.cache = new LRUCache({
      maxSize: options.maxBytes ?? STORED_POLICIES_MAX_BYTES,
      sizeCalculation: (e) => e.set.bytes,
    });
    this.unsubscribe =
      options.bus?.subscribe(FORWARD_AUTH_POLICIES_CHANGED_SUBJECT, (data) => this.onChanged(data)) ??
      (() => {});
  }

  match(
    caller: Caller,
    method: string,
    host: string,
    path: string,
  ): Policy | undefined | Promise<Policy | undefined> {
    const file = this.file.of(caller.workspaceId);
    const first = file.first(method, host, path);
    if (first !== undefined) return first;
    const entry = this.cache.get(caller.workspaceId);
    if (entry !== undefined && entry.expiresAt > this.options.clock.now()) {
      return entry.set.first(method, host, path) ?? file.fallback ?? entry.set.fallback;
    }
    return this.loaded(caller).then(
      (stored) => stored.first(method, host, path) ?? file.fallback ?? stored.fallback,
    );
  }

  /** How many workspaces' policies are held (tests). */
  get size(): number {
    return this.cache.size;
  }

  close(): void {
    this.unsubscribe();
    this.cache.clear();
  }

  private loaded(caller: Caller): Promise<PolicySet> {
    const ws = caller.workspaceId;
    let p = this.loading.get(ws);
    if (p !== undefined) return p;
    p = this.load(caller).then((rows) => {
      const set = this.compile(ws, rows);
      // Kept only when no change came while it loaded (the change dropped this load).
      if (this.loading.get(ws) === p) {
        this.cache.set(ws, {
          set,
          expiresAt: this.options.clock.now() + (this.options.ttlMs ?? STORED_POLICIES_TTL_MS),
        });
      }
      return set;
    });
    const mine = p;
    this.loading.set(ws, mine);
    const done = () => {
      if (this.loading.get(ws) === mine) this.loading.delete(ws);
    };
    mine.then(done, done);
    return mine;
  }

  /** The stored policies as a set; one the gateway's schema no longer accepts is left out, and logged. */
  private compile(workspaceId: string, rows: readonly ForwardAuthPolicy[]): PolicySet {
    const policies: PolicyInput[] = [];
    let fallback: PolicyInput | undefined;
    let bytes = 0;
    for (const row of rows) {
      let def: unknown;
      try {
        def = JSON.parse(row.definitionJson);
      } catch {
        def = undefined;
      }
      const checked = validatePolicySet(row.isDefault ? { policies: [], default: def } : { policies: [def] });
      if (!checked.ok) {
        this.options.log.warn(
          { workspaceId, policyId: row.policyId },
          "a stored forward-auth policy is not valid: left out",
        );
        continue;
      }
      bytes += row.definitionJson.length;
      if (row.isDefault) fallback = checked.value.default;
      else policies.push(checked.value.policies[0]!);
    }
    try {
      return PolicySet.from({ policies, ...(fallback ? { default: fallback } : {}) }, bytes);
    } catch (err) {
      this.options.log.warn(
        { err, workspaceId },
        "the stored forward-auth policies do not compile: none apply",
      );
      return PolicySet.empty;
    }
  }

  private onChanged(data: Uint8Array) {
    let workspaceId: string;
    try {
      workspaceId = fromBinary(ForwardAuthPoliciesChangedSchema, data).workspaceId;
    } catch {
      // An unreadable message still means something changed: everything goes.
      this.cache.clear();
      this.loading.clear();
      return;
    }
    this.cache.delete(workspaceId);
    this.loading.delete(workspaceId);
  }
}
