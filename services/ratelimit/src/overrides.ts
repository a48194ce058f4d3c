import { create, fromBinary } from "@bufbuild/protobuf";
import { OverridesChangedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { OverrideSchema } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import type { Bus } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import { SUBJECT_OVERRIDES_CHANGED } from "./events.ts";
import type { Namespace, Override, RatelimitStore } from "./store/ratelimit-store.ts";

interface Wildcard {
  override: Override;
  pattern: RegExp;
  /** Characters other than `*`: the more, the more specific. */
  literal: number;
}

/**
 * The overrides of one namespace, ready to match an identifier. An exact
 * identifier wins over every wildcard; among wildcards (`*` matches any
 * sequence, anchored, everything else literal) the one with the longest
 * literal part wins, ties broken by the identifier in code-unit order, so the
 * answer never depends on storage order.
 */
export class OverrideSet {
  static readonly EMPTY = new OverrideSet([]);
  private readonly exact = new Map<string, Override>();
  private readonly wildcards: Wildcard[] = [];

  constructor(overrides: readonly Override[]) {
    for (const o of overrides) {
      if (!o.identifier.includes("*")) {
        this.exact.set(o.identifier, o);
        continue;
      }
      const source = o.identifier.split("*").map(escapeRegExp).join(".*");
      this.wildcards.push({
        override: o,
        pattern: new RegExp(`^${source}$`, "s"),
        literal: o.identifier.replaceAll("*", "").length,
      });
    }
    this.wildcards.sort(
      (a, b) =>
        b.literal - a.literal ||
        (a.override.identifier < b.override.identifier
          ? -1
          : a.override.identifier > b.override.identifier
            ? 1
            : 0),
    );
  }

  match(identifier: string): Override | undefined {
    const exact = this.exact.get(identifier);
    if (exact) return exact;
    for (const w of this.wildcards) if (w.pattern.test(identifier)) return w.override;
    return undefined;
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Overrides per namespace, loaded once and kept until they change (up to
 * `maxNamespaces`, the least recently used leaving first). A change
 * made on any replica is announced on the bus (events.ratelimit.overrides_changed)
 * and drops the namespace's entry everywhere, so the next check reloads it.
 */
export class OverrideCache {
  private readonly sets: LRUCache<string, OverrideSet>;
  /**
   * Loads under way. A change drops the namespace's entry, so a load is kept
   * only while it is still the one here: a load that a change overtook is not
   * kept, and nothing is remembered per namespace once its load settles.
   */
  private readonly loading = new Map<string, Promise<OverrideSet>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly store: RatelimitStore,
    bus: Bus,
    maxNamespaces = 10_000,
  ) {
    this.sets = new LRUCache({ max: maxNamespaces });
    this.unsubscribe = bus.subscribe(SUBJECT_OVERRIDES_CHANGED, (data) => {
      this.invalidate(fromBinary(OverridesChangedSchema, data).namespaceId);
    });
  }

  /** The namespace's overrides when cached: lets a check go without awaiting. */
  peek(namespaceId: string): OverrideSet | undefined {
    return this.sets.get(namespaceId);
  }

  get(namespaceId: string): Promise<OverrideSet> {
    const cached = this.sets.get(namespaceId);
    if (cached) return Promise.resolve(cached);
    const inFlight = this.loading.get(namespaceId);
    if (inFlight) return inFlight;
    const load: Promise<OverrideSet> = this.store.allOverrides(namespaceId).then(
      (overrides) => {
        const set = overrides.length === 0 ? OverrideSet.EMPTY : new OverrideSet(overrides);
        if (this.loading.get(namespaceId) === load) {
          this.loading.delete(namespaceId);
          this.sets.set(namespaceId, set);
        }
        return set;
      },
      (err) => {
        if (this.loading.get(namespaceId) === load) this.loading.delete(namespaceId);
        throw err;
      },
    );
    this.loading.set(namespaceId, load);
    return load;
  }

  invalidate(namespaceId: string): void {
    this.sets.delete(namespaceId);
    this.loading.delete(namespaceId);
  }

  close(): void {
    this.unsubscribe();
  }
}

/** The wire form of an override; `namespace` is the namespace's name. */
export const overrideMessage = (ns: Namespace, o: Override) =>
  create(OverrideSchema, {
    overrideId: o.id,
    namespace: ns.name,
    identifier: o.identifier,
    limit: BigInt(o.limit),
    duration: BigInt(o.duration),
  });
