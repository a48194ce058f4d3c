import type { Clock, Logger, Sql } from "@latchkey/runtime";
import type { RefillRecord } from "./store/keys-store.ts";
import { PostgresKeysStore } from "./store/postgres-keys-store.ts";

/**
 * When credits refill. Daily: at 00:00 UTC. Monthly: at 00:00 UTC on
 * refill.day, or on the month's last day when the month is shorter. A refill
 * replaces the balance with refill.amount.
 *
 * A key stores the instant of the last refill it received (last_refill_at;
 * its creation, or the moment its refill was configured, stands in before the
 * first). A refill is due when the latest refill instant at or before now is
 * later than that: so a refill happens at most once per period, and one missed
 * while Latchkey was down happens as soon as anything looks at the key again
 * (a verification, a credits update, the minute job). Only the latest missed
 * period counts: refills replace, so applying older ones too would change nothing.
 */

const DAY = 86_400_000;

/** The latest refill instant at or before `at` (unix ms) for this schedule. */
export function latestRefillAt(refill: Pick<RefillRecord, "interval" | "day">, at: number): number {
  if (refill.interval === "daily") return Math.floor(at / DAY) * DAY;
  const d = new Date(at);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth();
  const thisMonth = monthlyInstant(year, month, refill.day ?? 1);
  return thisMonth <= at ? thisMonth : monthlyInstant(year, month - 1, refill.day ?? 1);
}

/** 00:00 UTC of `day` in the month, or of the month's last day when the month is shorter. */
function monthlyInstant(year: number, month: number, day: number): number {
  // Day 0 of the next month is the last day of this one; Date.UTC normalises month -1 and 12.
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(day, lastDay));
}

/** The refill instant due for a key at `at`, or null when none is due. */
export function dueRefill(
  key: { refill: RefillRecord | null; lastRefillAt: number | null; createdAt: number },
  at: number,
): number | null {
  if (key.refill === null) return null;
  const due = latestRefillAt(key.refill, at);
  return due > (key.lastRefillAt ?? key.createdAt) ? due : null;
}

/**
 * The balance a key has at `at`: its stored balance, or its refill amount
 * when a refill is due and not yet applied. For reads; spends apply the refill
 * in the same statement (see the stores).
 */
export function effectiveRemaining(
  key: {
    remaining: number | null;
    refill: RefillRecord | null;
    lastRefillAt: number | null;
    createdAt: number;
  },
  at: number,
): number | null {
  if (key.remaining === null || key.refill === null) return key.remaining;
  return dueRefill(key, at) === null ? key.remaining : key.refill.amount;
}

/**
 * Applies every refill due at `atMs` (unix ms), at most once per period.
 * For `npm run latchkey -- credits refill --at <unix ms>` and the minute job.
 */
export async function applyDueRefills(sql: Sql, atMs: number): Promise<{ refilled: number }> {
  return { refilled: await new PostgresKeysStore(sql).applyDueRefills(atMs) };
}

const REFILL_LOCK = "latchkey-keys-refill";

/**
 * Runs applyDueRefills every `everyMs` (default a minute) on one instance at a
 * time: each run takes a PostgreSQL advisory lock and is skipped where another
 * instance holds it. Returns the function that stops it.
 */
export function startRefills(sql: Sql, options: { clock: Clock; log: Logger; everyMs?: number }): () => void {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      await sql.begin(async (tx) => {
        const [lock] = await tx<
          { locked: boolean }[]
        >`SELECT pg_try_advisory_xact_lock(hashtext(${REFILL_LOCK})) AS locked`;
        if (!lock?.locked) return;
        const { refilled } = await applyDueRefills(tx as unknown as Sql, options.clock.now());
        if (refilled > 0) options.log.info({ refilled }, "credits refilled");
      });
    } catch (err) {
      options.log.error({ err }, "applying due refills failed");
    } finally {
      running = false;
    }
  };
  void run();
  const timer = setInterval(() => void run(), options.everyMs ?? 60_000);
  timer.unref();
  return () => clearInterval(timer);
}
