import {
  type Clock,
  DOMAIN_EVENT,
  domainEvent,
  domainEventId,
  type EventSink,
  type Logger,
  type LoopProgress,
  loopProgress,
  type Sql,
} from "@latchkey/runtime";

/** Most keys of one workspace announced by one round: a workspace with many keys expiring takes no more. */
export const EXPIRING_PER_WORKSPACE = 100;
/** Most keys announced by one round, every workspace together; rounds follow one another until fewer are due. */
export const EXPIRING_PER_ROUND = 1_000;
/** The default of an API's `expiringNoticeDays`. */
export const DEFAULT_EXPIRING_DAYS = 7;

const DAY_MS = 86_400_000;

/**
 * One round of `key.expiring` notices at `at`: the live keys whose expiry falls within their API's
 * notice period and has not been announced, at most EXPIRING_PER_WORKSPACE of each workspace
 * (soonest first) and EXPIRING_PER_ROUND in all, each claimed by inserting its row in key_notices
 * (key, "expiring", the expiry) in the same statement: a row another replica inserted first is
 * skipped, so each expiry is announced once however many replicas run the round. A changed expiry
 * is a new period, announced again. Answers how many it announced.
 */
export async function announceExpiring(
  sql: Sql,
  events: EventSink,
  at: number,
  bounds: { perWorkspace?: number; perRound?: number } = {},
): Promise<number> {
  const perWorkspace = bounds.perWorkspace ?? EXPIRING_PER_WORKSPACE;
  const perRound = bounds.perRound ?? EXPIRING_PER_ROUND;
  const rows = await sql<
    { key_id: string; workspace_id: string; api_id: string; period: number; days: number }[]
  >`WITH due AS (
      SELECT k.id, k.workspace_id, k.api_id, k.expires, a.expiring_notice_days AS days,
        row_number() OVER (PARTITION BY k.workspace_id ORDER BY k.expires, k.id) AS n
      FROM keys k JOIN apis a ON a.id = k.api_id
      WHERE k.expires IS NOT NULL AND k.deleted_at IS NULL AND a.deleted_at IS NULL
        AND k.expires > ${at}::bigint AND a.expiring_notice_days > 0
        AND k.expires <= ${at}::bigint + a.expiring_notice_days::bigint * ${DAY_MS}::bigint
        AND NOT EXISTS (SELECT 1 FROM key_notices s
          WHERE s.key_id = k.id AND s.kind = 'expiring' AND s.period = k.expires)
    ), claimed AS (
      INSERT INTO key_notices (key_id, kind, period, workspace_id, api_id, sent_at)
      SELECT id, 'expiring', expires, workspace_id, api_id, ${at}::bigint FROM due
        WHERE n <= ${perWorkspace} ORDER BY n, expires LIMIT ${perRound}
      ON CONFLICT DO NOTHING
      RETURNING key_id, workspace_id, api_id, period
    )
    SELECT c.key_id, c.workspace_id, c.api_id, c.period, d.days
      FROM claimed c JOIN due d ON d.id = c.key_id`;
  for (const r of rows) {
    // One id per key and expiry: a repeat (none is expected) is delivered once.
    const event = domainEvent(
      "key.expiring",
      r.workspace_id,
      { keyId: r.key_id, apiId: r.api_id, expiresAt: r.period, days: r.days },
      at,
      domainEventId("key.expiring", r.key_id, r.period),
    );
    events.publish(DOMAIN_EVENT, event.id, event);
  }
  return rows.length;
}

/**
 * key.expiring every `everyMs` (default a minute): rounds one after another until one finds nothing
 * due, each marking loopProgress `keys.expiring`. Every replica may run it: key_notices decides which one announces a key. Returns the stop.
 */
export function startExpiringNotices(
  sql: Sql,
  options: {
    clock: Clock;
    log: Logger;
    events: EventSink;
    everyMs?: number;
    progress?: LoopProgress;
    bounds?: { perWorkspace?: number; perRound?: number };
  },
): () => void {
  const progress = options.progress ?? loopProgress("keys.expiring");
  let running = false;
  let stopped = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      // A round holds at most EXPIRING_PER_WORKSPACE of a workspace, so one with fewer than a
      // round's worth may still leave more due: rounds follow until one finds nothing.
      for (let n = 1; n > 0 && !stopped; ) {
        n = await announceExpiring(sql, options.events, options.clock.now(), options.bounds);
        progress.mark();
      }
    } catch (err) {
      options.log.error({ err }, "announcing expiring keys failed");
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
