import { type Clock, type Logger, type LoopProgress, loopProgress, type Sql } from "@latchkey/runtime";
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
 * Most keys refilled by one statement, each statement its own transaction:
 * a key's row is locked only while its own statement runs, however many keys
 * other workspaces have due at the same instant (a spend of the key waits for
 * that statement, never for all of them).
 */
export const REFILLS_PER_STATEMENT = 1_000;

/**
 * Applies every refill due at `atMs` (unix ms), at most once per period, in
 * statements of REFILLS_PER_STATEMENT keys. For `npm run latchkey -- credits
 * refill --at <unix ms>` and the minute job.
 */
export async function applyDueRefills(sql: Sql, atMs: number): Promise<{ refilled: number }> {
  const store = new PostgresKeysStore(sql);
  let refilled = 0;
  for (;;) {
    const n = await store.applyDueRefills(atMs, REFILLS_PER_STATEMENT);
    refilled += n;
    if (n < REFILLS_PER_STATEMENT) return { refilled };
  }
}

const REFILL_LOCK = "latchkey-keys-refill";

/**
 * Runs the due refills every `everyMs` (default a minute) on one instance at a
 * time: each statement of REFILLS_PER_STATEMENT keys is a transaction that
 * takes a PostgreSQL advisory lock first, and a run stops where another
 * instance holds it. Marks loopProgress `keys.refills` with each statement and
 * each run that finds nothing due. Returns the function that stops it.
 */
export function startRefills(
  sql: Sql,
  options: { clock: Clock; log: Logger; everyMs?: number; progress?: LoopProgress },
): () => void {
  const progress = options.progress ?? loopProgress("keys.refills");
  let running = false;
  let stopped = false;
  const run = async () => {
    if (running) return;
    running = true;
    let refilled = 0;
    try {
      const at = options.clock.now();
      for (let n = REFILLS_PER_STATEMENT; n === REFILLS_PER_STATEMENT && !stopped; ) {
        const done = await sql.begin(async (tx) => {
          const [lock] = await tx<
            { locked: boolean }[]
          >`SELECT pg_try_advisory_xact_lock(hashtext(${REFILL_LOCK})) AS locked`;
          if (!lock?.locked) return undefined;
          return new PostgresKeysStore(tx as unknown as Sql).applyDueRefills(at, REFILLS_PER_STATEMENT);
        });
        // Another instance holds the lock: it applies them.
        n = done ?? 0;
        refilled += n;
        progress.mark();
      }
      if (refilled > 0) options.log.info({ refilled }, "credits refilled");
    } catch (err) {
      options.log.error({ err, refilled }, "applying due refills failed");
    } finally {
      running = false;
    }
  };
  void run();
  const timer = setInterval(() => void run(), options.everyMs ?? 60_000);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
