import type { NamedLimitGroup } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { type Clock, DOMAIN_EVENT, domainEvent, domainEventId, type EventSink } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import { noEvents } from "./events.ts";
import { type CounterCheck, type CounterOutcome, counterBytes } from "./limiter/sliding-windows.ts";

/**
 * ratelimit.exceeded, for webhooks: at most one per counter (workspace,
 * namespace, identifier, duration) and window. The RPCs that learn of a denial
 * (limit, limitBatch, multiLimit, checkNamedLimits) hand it here whatever
 * counts the checks (memory, peers, Redis); this process publishes the first
 * denial of each counter's window and remembers the window, so the others of
 * the window cost a Map look-up. The event's id is derived from the counter and
 * the window start, so replicas that each announce the same window publish the
 * same id, delivered once. Passed checks never reach this file; a check refused
 * because the workspace's counters are full (CounterOutcome.refused) is announced
 * by nothing.
 */

/** Counters whose announced window this process remembers (about 150 bytes each plus the identifier). */
export const MAX_ANNOUNCED_COUNTERS = 100_000;
/**
 * And their bytes, counted as a counter's (counterBytes): the longest identifiers, which a denial needs no
 * counter to name (a cost above the limit), cost several times a short one.
 */
export const MAX_ANNOUNCED_BYTES = 32 * 1024 * 1024;

const SEP = "\u001f";

/** What of a checks.ts ResolvedCheck a denial reads (the type itself would make an import cycle through deps.ts). */
interface DeniedCheck {
  counter: CounterCheck;
  namespace: { workspaceId: string; name: string };
  check: { identifier: string };
}

export class ExceededEvents {
  /**
   * The window start last announced, by counter key and duration; bounded in count and in bytes as
   * counterBytes counts them, the counter denied least recently forgotten first.
   */
  private readonly announced: LRUCache<string, number>;

  constructor(
    private readonly sink: EventSink,
    private readonly clock: Clock,
    max = MAX_ANNOUNCED_COUNTERS,
    maxBytes = MAX_ANNOUNCED_BYTES,
  ) {
    this.announced = new LRUCache({
      max,
      maxSize: maxBytes,
      sizeCalculation: (_start, at) => counterBytes(at),
    });
  }

  /** Counters remembered, and their bytes. */
  get remembered(): { counters: number; bytes: number } {
    return { counters: this.announced.size, bytes: this.announced.calculatedSize };
  }

  /** A standalone check (limit, limitBatch, multiLimit: a checks.ts ResolvedCheck) was denied. */
  limitDenied(resolved: DeniedCheck, outcome: CounterOutcome): void {
    this.denied(
      resolved.counter,
      outcome,
      resolved.namespace.workspaceId,
      resolved.namespace.name,
      resolved.check.identifier,
    );
  }

  /**
   * A named limit of a verification was denied: its namespace is the limit's
   * name, its identifier the key or identity that owns it.
   */
  namedDenied(group: NamedLimitGroup, index: number, counter: CounterCheck, outcome: CounterOutcome): void {
    const limit = group.limits[index]!;
    this.denied(counter, outcome, group.workspaceId, limit.name, limit.owner);
  }

  private denied(
    counter: CounterCheck,
    outcome: CounterOutcome,
    workspaceId: string,
    namespace: string,
    identifier: string,
  ): void {
    // A refusal for want of room (the workspace's counters are full) is no limit exceeded.
    if (this.sink === noEvents || outcome.refused) return;
    const windowStart = outcome.reset - counter.duration;
    const at = counter.key + SEP + counter.duration;
    // get() marks it used: the counters denied most recently are the last forgotten.
    if (this.announced.get(at) === windowStart) return;
    this.announced.set(at, windowStart);
    const id = domainEventId("ratelimit.exceeded", counter.key, counter.duration, windowStart);
    const data = { namespace, identifier, limit: outcome.limit, duration: counter.duration, windowStart };
    this.sink.publish(
      DOMAIN_EVENT,
      id,
      domainEvent("ratelimit.exceeded", workspaceId, data, this.clock.now(), id),
    );
  }
}
