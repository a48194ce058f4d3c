import { invalidInput } from "@latchkey/runtime";
import type { CreditEvents } from "./credit-events.ts";
import type { CachedKey, Spend } from "./store/keys-store.ts";

/**
 * A key's own credits.low thresholds (else its API's): percentages of its
 * baseline (its refill amount, else the balance it was last given), each
 * announced by the spend that takes the balance to the credits it stands for
 * (baseline x percent / 100, rounded down) or below, once per key, threshold
 * and credit period. They replace CREDITS_LOW_FRACTION's one threshold for
 * that key.
 *
 * Exactly once across replicas without a statement of its own: the spend
 * statement decides each spend under the key's row lock (SpendQueue), so
 * exactly one spend of the deployment sees its balance go from above a
 * threshold to it or below, and every spend already carries the balance
 * after it, its baseline and its period. Should the balance rise again within
 * the period (an increment) and fall across the threshold once more, the
 * event's id (key, period, percent) is the same, so it is delivered once.
 */

/** Most thresholds on one key or API. */
export const MAX_CREDIT_THRESHOLDS = 10;

/**
 * At most MAX_CREDIT_THRESHOLDS whole percentages from 0 to 100, kept from the
 * highest down without repeats; empty: none of its own (absent).
 */
export function validThresholds(values: readonly number[], location: string): number[] | null {
  if (values.length > MAX_CREDIT_THRESHOLDS) {
    throw invalidInput(location, `creditThresholds holds at most ${MAX_CREDIT_THRESHOLDS} percentages`);
  }
  for (const [i, v] of values.entries()) {
    if (!Number.isInteger(v) || v < 0 || v > 100) {
      throw invalidInput(`${location}/${i}`, "each credit threshold is a whole percentage from 0 to 100");
    }
  }
  if (values.length === 0) return null;
  return [...new Set(values)].sort((a, b) => b - a);
}

/**
 * The balance a percentage of `baseline` stands for, rounded down; a product
 * a hair off a whole number only through binary fractions (0.07 x 100) counts
 * as that number.
 */
export function thresholdCredits(baseline: number, percent: number): number {
  const x = (baseline * percent) / 100;
  const whole = Math.round(x);
  return Math.abs(x - whole) <= 1e-9 * Math.max(1, x) ? whole : Math.floor(x);
}

/**
 * Announces each of the key's thresholds that this spend took the balance
 * to or below. A few comparisons per spend of a key with thresholds, nothing
 * for others.
 */
export function announceThresholds(
  events: CreditEvents,
  key: Pick<CachedKey, "id" | "workspaceId" | "apiId">,
  thresholds: readonly number[],
  spend: Spend,
  cost: number,
  at: number,
): void {
  const { remaining, baseline, period } = spend;
  if (!spend.spent || remaining === null || cost <= 0 || baseline == null || period === undefined) return;
  const before = remaining + cost;
  for (const percent of thresholds) {
    const credits = thresholdCredits(baseline, percent);
    if (before > credits && remaining <= credits)
      events.thresholdCrossed(key, remaining, percent, credits, period, at);
  }
}
