import {
  DOMAIN_EVENT,
  type DomainEventData,
  type DomainEventType,
  domainEvent,
  domainEventId,
  type EventSink,
  env,
} from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import { noEvents } from "./events.ts";
import type { CachedKey, CreditsCrossing, GroupSpend, SpendGroup } from "./store/keys-store.ts";

/**
 * credits.low and credits.exhausted, for webhooks. A key's credit period is its
 * refill period when it refills (from its last refill), else the time since
 * its balance was last given (createKey, updateKey, updateCredits "set";
 * increment and decrement leave both the period and the baseline alone).
 * Within a period, credits.low is announced by the spend that takes the
 * balance from at least the threshold (CREDITS_LOW_FRACTION of the refill
 * amount, or of the balance last given) to below it, credits.exhausted by the
 * spend that takes it to 0, or else by the first verification refused while
 * credits are left (a cost that does not divide the balance leaves it above 0:
 * 10 credits spent 3 at a time leave 1, and the fourth is refused; such a
 * refusal changes no row, so other instances may publish it too, under the
 * same id, delivered once). A spend is decided under the key's row lock, so
 * one spend in the whole deployment does each (SpendQueue finds it in its
 * statement's result); should the balance rise and cross again in the same
 * period, the event has the same id (key and period), so it is delivered once,
 * and this process does not even publish it twice. A key with thresholds of
 * its own or of its API announces those instead (credit-thresholds.ts).
 */

export const DEFAULT_LOW_FRACTION = 0.1;

const SEP = "\u001f";

/** Events remembered as published by this process (type, key and period, about 100 bytes each). */
export const MAX_ANNOUNCED_CREDITS = 10_000;

/** CREDITS_LOW_FRACTION: a number from 0 (credits.low off) to 1; anything else stops the start. */
export function creditsLowFractionFromEnv(): number {
  const text = env.string("CREDITS_LOW_FRACTION", "0.1") ?? "0.1";
  const fraction = Number(text);
  if (!/^\s*[0-9.eE+-]+\s*$/.test(text) || !(fraction >= 0 && fraction <= 1)) {
    throw new Error(`CREDITS_LOW_FRACTION must be a number from 0 to 1, got '${text}'`);
  }
  return fraction;
}

/**
 * The least balance that is not low: a balance is low below baseline x fraction,
 * and balances are whole, so below its ceiling. A product that lands a hair above
 * a whole number only through binary fractions (0.07 x 100) counts as that number.
 */
export function lowThreshold(baseline: number, fraction: number): number {
  const x = baseline * fraction;
  const whole = Math.round(x);
  return Math.abs(x - whole) <= 1e-9 * Math.max(1, x) ? whole : Math.ceil(x);
}

/**
 * Where in a spend group's run the balance crossed: the index of the spend
 * that took it below the low threshold and of the one that took it to 0 (-1:
 * none), and the threshold. Once per group of a spend statement, never per spend.
 */
export interface RunCrossings {
  low: number;
  threshold: number;
  exhausted: number;
  period: number;
}

export function runCrossings(
  group: SpendGroup,
  result: GroupSpend,
  lowFraction: number,
): RunCrossings | undefined {
  const { before, granted, period, baseline } = result;
  if (before === null || period === undefined || group.cost === 0 || granted === 0) return undefined;
  const after = before - granted * group.cost;
  const exhausted = after === 0 ? granted - 1 : -1;
  let low = -1;
  let threshold = 0;
  if (lowFraction > 0 && baseline !== null && baseline !== undefined) {
    threshold = lowThreshold(baseline, lowFraction);
    // The spend whose balance before it was still at least the threshold, and after it below.
    if (before >= threshold && after < threshold) low = Math.floor((before - threshold) / group.cost);
  }
  return low === -1 && exhausted === -1 ? undefined : { low, threshold, exhausted, period };
}

/** The crossing of the spend at `index` of a run, if it crossed anything. */
export function crossingAt(c: RunCrossings, index: number): CreditsCrossing | undefined {
  if (index !== c.low && index !== c.exhausted) return undefined;
  return {
    period: c.period,
    low: index === c.low ? c.threshold : undefined,
    exhausted: index === c.exhausted,
  };
}

/** Publishes what spends crossed, once per key, period and type in this process. */
export class CreditEvents {
  /** What was published, the first published forgotten first (has() leaves the order alone). */
  private readonly announced: LRUCache<string, true>;

  constructor(
    private readonly sink: EventSink,
    max = MAX_ANNOUNCED_CREDITS,
    /** CREDITS_LOW_FRACTION in percent, for credits.low's payload. */
    private readonly lowPercent = DEFAULT_LOW_FRACTION * 100,
  ) {
    this.announced = new LRUCache({ max });
  }

  /** A spend of `key` crossed: its balance is now `remaining`. Appends to the sink's buffer. */
  crossed(
    key: Pick<CachedKey, "id" | "workspaceId" | "apiId">,
    remaining: number,
    crossing: CreditsCrossing,
    at: number,
  ): void {
    if (this.sink === noEvents) return;
    if (crossing.low !== undefined) {
      this.publish("credits.low", key, crossing.period, at, {
        keyId: key.id,
        apiId: key.apiId,
        remaining,
        threshold: crossing.low,
        percent: this.lowPercent,
      });
    }
    if (crossing.exhausted) {
      this.publish("credits.exhausted", key, crossing.period, at, {
        keyId: key.id,
        apiId: key.apiId,
        remaining,
      });
    }
  }

  /**
   * A spend of `key` took its balance to `credits` (`percent` of its baseline) or
   * below: credits.low for that threshold (credit-thresholds.ts), once per period.
   */
  thresholdCrossed(
    key: Pick<CachedKey, "id" | "workspaceId" | "apiId">,
    remaining: number,
    percent: number,
    credits: number,
    period: number,
    at: number,
  ): void {
    if (this.sink === noEvents) return;
    this.publish(
      "credits.low",
      key,
      period,
      at,
      { keyId: key.id, apiId: key.apiId, remaining, threshold: credits, percent },
      `${percent}%`,
    );
  }

  private publish<T extends "credits.low" | "credits.exhausted">(
    type: T & DomainEventType,
    key: Pick<CachedKey, "id" | "workspaceId">,
    period: number,
    at: number,
    data: DomainEventData[T],
    /** A key's own threshold ("50%"): one event per threshold; absent for CREDITS_LOW_FRACTION's, whose id stays. */
    threshold?: string,
  ): void {
    // Remembered by a plain string: every verification refused for want of credits asks, and only
    // the first of a period pays for the event's id (a hash).
    const seen = `${type}${SEP}${key.workspaceId}${SEP}${key.id}${SEP}${period}${threshold === undefined ? "" : SEP + threshold}`;
    if (this.announced.has(seen)) return;
    this.announced.set(seen, true);
    const id =
      threshold === undefined
        ? domainEventId(type, key.workspaceId, key.id, period)
        : domainEventId(type, key.workspaceId, key.id, period, threshold);
    this.sink.publish(DOMAIN_EVENT, id, domainEvent(type, key.workspaceId, data, at, id));
  }
}
