import {
  type AuditRecord,
  insertAudit,
  newId,
  PostgresAuditedStore,
  type Sql,
  type TransactionSql,
} from "@latchkey/runtime";
import {
  type AttemptOutcome,
  type AttemptRecord,
  type ClaimCaps,
  type ClaimedDelivery,
  type DeliveryRecord,
  type DeliveryStatus,
  type EventRecord,
  type IntakeOptions,
  OUTBOX_FULL,
  type PageQuery,
  parseCursor,
  type WebhookRecord,
  type WebhookStore,
  type WebhookUpdate,
} from "./webhook-store.ts";

interface WebhookRow {
  id: string;
  workspace_id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: string | null;
  sealed_secret: string;
  consecutive_failures: number;
  created_at: number;
  updated_at: number;
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  workspace_id: string;
  event_id: string;
  event_type: string;
  occurred_at: number;
  data_json: string;
  status: DeliveryStatus;
  next_attempt_at: number | null;
  delivered_at: number | null;
  created_at: number;
  redelivery_of: string | null;
}

type ClaimRow = DeliveryRow & { url: string; sealed_secret: string; attempts_made: number };

interface AttemptRow {
  delivery_id: string;
  attempted_at: number;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
}

const webhookOf = (r: WebhookRow): WebhookRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  url: r.url,
  events: r.events,
  description: r.description,
  enabled: r.enabled,
  disabledReason: r.disabled_reason,
  sealedSecret: r.sealed_secret,
  consecutiveFailures: r.consecutive_failures,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/**
 * A webhook being disabled ends its pending deliveries, failed with no further attempt: they are not
 * sent when it is enabled again (webhooks.redeliver sends one again), and no claim scans them.
 */
const failPending = (sql: Sql | TransactionSql, webhookId: string) =>
  sql`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, leased_until = NULL
      WHERE webhook_id = ${webhookId} AND status = 'pending'`;

/**
 * The claim that goes round the workspaces (migration 4's indexes). `spaces` steps through the
 * workspaces with pending deliveries, one index probe each, reading each one's earliest; `leased`
 * counts the attempts in flight per webhook from the few leased rows. Of the workspaces with
 * something due and room under their cap, those with the fewest in flight come first (then the
 * earliest due), as many as could each take one of the `limit` slots, plus one for each
 * workspace with a webhook at its cap (which may have nothing to give); each of those webhooks
 * gives its oldest due up to what it may still have in flight. The slots go by turns: every
 * workspace's first before any's second, counting what each already has in flight.
 */
export function fairClaimStatement(
  sql: Sql | TransactionSql,
  now: number,
  limit: number,
  lease: number,
  caps: ClaimCaps,
) {
  return sql`
    WITH RECURSIVE spaces AS (
      (SELECT d.workspace_id, d.next_attempt_at FROM webhook_deliveries d
       WHERE d.status = 'pending' ORDER BY d.workspace_id, d.next_attempt_at LIMIT 1)
      UNION ALL
      SELECT n.workspace_id, n.next_attempt_at FROM spaces s CROSS JOIN LATERAL (
        SELECT d.workspace_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.status = 'pending' AND d.workspace_id > s.workspace_id
        ORDER BY d.workspace_id, d.next_attempt_at LIMIT 1) n
    ), leased AS (
      SELECT workspace_id, webhook_id, count(*)::int AS n FROM webhook_deliveries
      WHERE leased_until IS NOT NULL AND leased_until > ${now}
      GROUP BY workspace_id, webhook_id
    ), due_spaces AS (
      SELECT * FROM (
        SELECT s.workspace_id, s.next_attempt_at AS first_due,
               COALESCE((SELECT sum(l.n) FROM leased l WHERE l.workspace_id = s.workspace_id), 0)::int AS busy
        FROM spaces s WHERE s.next_attempt_at <= ${now}) x
      WHERE busy < ${caps.perWorkspace}
      ORDER BY busy, first_due
      LIMIT ${limit} + (SELECT count(DISTINCT workspace_id) FROM leased WHERE n >= ${caps.perWebhook})
    ), candidates AS (
      SELECT c.id, c.next_attempt_at, ds.busy,
             row_number() OVER (PARTITION BY ds.workspace_id ORDER BY c.next_attempt_at, c.id) AS rn
      FROM due_spaces ds
      JOIN webhooks w ON w.workspace_id = ds.workspace_id AND w.enabled
      CROSS JOIN LATERAL (
        SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= ${now}
        ORDER BY d.next_attempt_at
        LIMIT GREATEST(${caps.perWebhook} - COALESCE((SELECT l.n FROM leased l WHERE l.webhook_id = w.id), 0), 0)
      ) c
    ), picked AS (
      SELECT id FROM candidates WHERE rn <= ${caps.perWorkspace} - busy
      ORDER BY busy + rn, next_attempt_at, id
      LIMIT ${limit}
    ), locked AS (
      SELECT d.id FROM webhook_deliveries d
      WHERE d.id IN (SELECT id FROM picked) AND d.status = 'pending' AND d.next_attempt_at <= ${now}
      FOR UPDATE OF d SKIP LOCKED
    )
    UPDATE webhook_deliveries d SET next_attempt_at = ${lease}, leased_until = ${lease}
    FROM locked, webhooks w
    WHERE d.id = locked.id AND w.id = d.webhook_id
    RETURNING d.*, w.url, w.sealed_secret`;
}

/** Deliveries deleted per statement by pruneDeliveries. */
const PRUNE_BATCH = 5_000;

/** The webhooks context's audit records (migrations.ts, version 2). */
export const WEBHOOKS_AUDIT_TABLE = "webhooks_audit_log";

/**
 * The store in PostgreSQL (or PGlite in the embedded default). Every query names the workspace, so
 * nothing crosses workspaces; the delivery rows are the outbox the worker drains.
 */
export class PostgresWebhookStore extends PostgresAuditedStore implements WebhookStore {
  /**
   * `maxPendingPerWorkspace` is intake's bound when its caller gives none (the settings'
   * WEBHOOK_WORKSPACE_MAX_PENDING, through deps.ts); unbounded when unset.
   */
  constructor(
    sql: Sql,
    private readonly bounds: { maxPendingPerWorkspace?: number } = {},
  ) {
    super(sql, WEBHOOKS_AUDIT_TABLE);
  }

  async createWebhook(w: WebhookRecord, max: number, audit?: AuditRecord) {
    return this.sql.begin(async (tx) => {
      // One creation at a time per workspace, so concurrent ones cannot pass the count together.
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`webhooks:${w.workspaceId}`}))`;
      const [{ n }] =
        (await tx`SELECT count(*)::int AS n FROM webhooks WHERE workspace_id = ${w.workspaceId}`) as unknown as [
          { n: number },
        ];
      if (n >= max) return false;
      await tx`
        INSERT INTO webhooks (id, workspace_id, url, events, description, enabled, disabled_reason,
                              sealed_secret, consecutive_failures, created_at, updated_at)
        VALUES (${w.id}, ${w.workspaceId}, ${w.url}, ${w.events}::text[], ${w.description}, ${w.enabled},
                ${w.disabledReason}, ${w.sealedSecret}, ${w.consecutiveFailures}, ${w.createdAt}, ${w.updatedAt})`;
      if (audit) await insertAudit(tx, WEBHOOKS_AUDIT_TABLE, audit);
      return true;
    });
  }

  async findWebhook(workspaceId: string, id: string) {
    const rows = await this.sql<WebhookRow[]>`
      SELECT * FROM webhooks WHERE workspace_id = ${workspaceId} AND id = ${id}`;
    return rows[0] ? webhookOf(rows[0]) : undefined;
  }

  async listWebhooks(workspaceId: string, page: PageQuery) {
    const rows = await this.sql<WebhookRow[]>`
      SELECT * FROM webhooks
      WHERE workspace_id = ${workspaceId}
        ${page.after !== undefined ? this.sql`AND id COLLATE "C" > ${page.after}` : this.sql``}
      ORDER BY id COLLATE "C"
      LIMIT ${page.limit}`;
    return rows.map(webhookOf);
  }

  async updateWebhook(workspaceId: string, id: string, u: WebhookUpdate, audit?: AuditRecord) {
    return this.audited(
      audit,
      async (sql) => {
        const rows = await sql`
          UPDATE webhooks SET updated_at = ${u.updatedAt}
            ${u.url !== undefined ? sql`, url = ${u.url}` : sql``}
            ${u.events !== undefined ? sql`, events = ${u.events}::text[]` : sql``}
            ${u.description !== undefined ? sql`, description = ${u.description}` : sql``}
            ${u.enabled === true ? sql`, enabled = true, disabled_reason = NULL, consecutive_failures = 0` : sql``}
            ${u.enabled === false ? sql`, enabled = false` : sql``}
          WHERE workspace_id = ${workspaceId} AND id = ${id}
          RETURNING id`;
        if (rows.length > 0 && u.enabled === false) await failPending(sql, id);
        return rows.length > 0;
      },
      (updated) => updated,
    );
  }

  async deleteWebhook(workspaceId: string, id: string, audit?: AuditRecord) {
    return this.audited(
      audit,
      async (tx) =>
        (await tx`DELETE FROM webhooks WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`)
          .length > 0,
      (deleted) => deleted,
    );
  }

  async intake(events: readonly EventRecord[], now: number, options: IntakeOptions = {}) {
    const result = { added: 0, refused: new Map<string, number>() };
    if (events.length === 0) return 0;
    const max = options.maxPendingPerWorkspace ?? this.bounds.maxPendingPerWorkspace ?? 2 ** 31 - 1;
    const due = now + (options.firstDelayMs ?? 0);
    await this.sql.begin(async (tx) => {
      // Which webhooks take which events, in one statement whatever the batch: each event (the
      // first of a repeated id) with each enabled webhook of its workspace that wants its type and
      // has not taken it, and whether it fits under its workspace's bound of pending deliveries,
      // counted up to the bound on the pending index (once per workspace: room is materialized, or
      // the planner counts again for every pair), earlier events first.
      const pairs = await tx<{ ord: number; webhook_id: string; fits: boolean }[]>`
        WITH ev AS (
          SELECT DISTINCT ON (e.id, e.workspace_id) e.id, e.type, e.workspace_id, e.ord
          FROM unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.type)}::text[],
                      ${events.map((e) => e.workspaceId)}::text[])
               WITH ORDINALITY AS e(id, type, workspace_id, ord)
          ORDER BY e.id, e.workspace_id, e.ord
        ), pairs AS (
          SELECT ev.ord, ev.workspace_id, w.id AS webhook_id
          FROM ev JOIN webhooks w ON w.workspace_id = ev.workspace_id AND w.enabled AND ev.type = ANY(w.events)
          -- OFFSET 0 keeps this a probe of the unique index on both columns per pair; pulled up into
          -- an anti join, the planner may probe by event id alone and read the whole index each time.
          WHERE NOT EXISTS (
            SELECT 1 FROM webhook_deliveries d
            WHERE d.webhook_id = w.id AND d.event_id = ev.id AND d.redelivery_of IS NULL OFFSET 0)
        ), room AS MATERIALIZED (
          SELECT s.workspace_id, ${max}::int - (
            SELECT count(*) FROM (
              SELECT 1 FROM webhook_deliveries d
              WHERE d.workspace_id = s.workspace_id AND d.status = 'pending' LIMIT ${max}::int) c
          ) AS room
          FROM (SELECT DISTINCT workspace_id FROM pairs) s
        )
        SELECT p.ord::int AS ord, p.webhook_id,
               row_number() OVER (PARTITION BY p.workspace_id ORDER BY p.ord, p.webhook_id) <= r.room AS fits
        FROM pairs p JOIN room r ON r.workspace_id = p.workspace_id`;
      const rows = pairs
        .filter((p) => p.fits)
        .map((p) => ({ e: events[p.ord - 1]!, webhookId: p.webhook_id }));
      for (const p of pairs) {
        if (p.fits) continue;
        const ws = events[p.ord - 1]!.workspaceId;
        result.refused.set(ws, (result.refused.get(ws) ?? 0) + 1);
      }
      if (rows.length === 0) return;
      const inserted = await tx`
        INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_type, occurred_at,
                                        data_json, status, next_attempt_at, created_at)
        SELECT r.id, r.webhook_id, r.workspace_id, r.event_id, r.event_type, r.occurred_at, r.data_json,
               'pending', ${due}, ${now}
        FROM unnest(${rows.map(() => newId("dlv"))}::text[], ${rows.map((r) => r.webhookId)}::text[],
                    ${rows.map((r) => r.e.workspaceId)}::text[], ${rows.map((r) => r.e.id)}::text[],
                    ${rows.map((r) => r.e.type)}::text[], ${rows.map((r) => r.e.occurredAt)}::bigint[],
                    ${rows.map((r) => r.e.dataJson)}::text[])
             AS r(id, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json)
        ON CONFLICT (webhook_id, event_id) WHERE redelivery_of IS NULL DO NOTHING
        RETURNING 1`;
      result.added = inserted.length;
    });
    // Told once committed, so a write that is retried tells it once.
    for (const [workspaceId, n] of result.refused) options.refused?.(workspaceId, n);
    return result.added;
  }

  async listDeliveries(workspaceId: string, webhookId: string, page: PageQuery, status?: DeliveryStatus) {
    const sql = this.sql;
    const after = page.after === undefined ? undefined : parseCursor(page.after);
    if (page.after !== undefined && after === undefined) return [];
    const rows = await sql<DeliveryRow[]>`
      SELECT * FROM webhook_deliveries
      WHERE workspace_id = ${workspaceId} AND webhook_id = ${webhookId}
        ${status !== undefined ? sql`AND status = ${status}` : sql``}
        ${
          after !== undefined
            ? sql`AND (created_at < ${after.createdAt} OR (created_at = ${after.createdAt} AND id COLLATE "C" < ${after.id}))`
            : sql``
        }
      ORDER BY created_at DESC, id COLLATE "C" DESC
      LIMIT ${page.limit}`;
    return this.withAttempts(rows);
  }

  async findDelivery(workspaceId: string, webhookId: string, id: string) {
    const rows = await this.sql<DeliveryRow[]>`
      SELECT * FROM webhook_deliveries WHERE workspace_id = ${workspaceId} AND webhook_id = ${webhookId} AND id = ${id}`;
    return (await this.withAttempts(rows))[0];
  }

  async redeliver(
    workspaceId: string,
    webhookId: string,
    deliveryId: string,
    id: string,
    now: number,
    audit?: AuditRecord,
    firstDelayMs = 0,
    maxPendingPerWorkspace?: number,
  ) {
    return this.audited(
      audit,
      async (tx): Promise<string | undefined | typeof OUTBOX_FULL> => {
        // Counted up to the bound on the pending index, as intake counts it.
        const max = maxPendingPerWorkspace ?? this.bounds.maxPendingPerWorkspace ?? 2 ** 31 - 1;
        const [held] = await tx<{ n: number }[]>`
          SELECT count(*)::int AS n FROM (
            SELECT 1 FROM webhook_deliveries WHERE workspace_id = ${workspaceId} AND status = 'pending' LIMIT ${max}
          ) p`;
        const rows = await tx<{ id: string }[]>`
          INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json,
                                          status, next_attempt_at, created_at, redelivery_of)
          SELECT ${id}, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json,
                 'pending', ${now + firstDelayMs}, ${now}, COALESCE(redelivery_of, id)
          FROM webhook_deliveries
          WHERE workspace_id = ${workspaceId} AND webhook_id = ${webhookId} AND id = ${deliveryId}
            AND ${held!.n < max}
          RETURNING id`;
        if (rows[0] !== undefined) return rows[0].id;
        if (held!.n < max) return undefined;
        // Full: answered as such only for a delivery the workspace has, so a missing one still reads as missing.
        const [found] = await tx`
          SELECT 1 FROM webhook_deliveries
          WHERE workspace_id = ${workspaceId} AND webhook_id = ${webhookId} AND id = ${deliveryId}`;
        return found === undefined ? undefined : OUTBOX_FULL;
      },
      (made) => typeof made === "string",
    );
  }

  async claimDue(now: number, limit: number, leaseMs: number, caps?: ClaimCaps) {
    const lease = now + leaseMs;
    const rows = caps
      ? await this.sql.begin(async (tx) => {
          // One capped claim at a time, across replicas: each counts the leases the one before it
          // committed, so together they keep the caps (the lock is taken before the statement, whose
          // snapshot then sees them).
          await tx`SELECT pg_advisory_xact_lock(hashtext('webhooks:claim'))`;
          return tx<ClaimRow[]>`${fairClaimStatement(tx, now, limit, lease, caps)}`;
        })
      : await this.sql<ClaimRow[]>`
          WITH due AS (
            SELECT d.id FROM webhook_deliveries d
            JOIN webhooks w ON w.id = d.webhook_id AND w.enabled
            WHERE d.status = 'pending' AND d.next_attempt_at <= ${now}
            ORDER BY d.next_attempt_at
            LIMIT ${limit}
            FOR UPDATE OF d SKIP LOCKED
          )
          UPDATE webhook_deliveries d SET next_attempt_at = ${lease}, leased_until = ${lease}
          FROM due, webhooks w
          WHERE d.id = due.id AND w.id = d.webhook_id
          RETURNING d.*, w.url, w.sealed_secret`;
    return rows.map(
      (r): ClaimedDelivery => ({
        id: r.id,
        webhookId: r.webhook_id,
        workspaceId: r.workspace_id,
        url: r.url,
        sealedSecret: r.sealed_secret,
        eventId: r.event_id,
        eventType: r.event_type,
        occurredAt: r.occurred_at,
        dataJson: r.data_json,
        attemptsMade: r.attempts_made,
        lease,
      }),
    );
  }

  async recordAttempt(
    claim: Pick<ClaimedDelivery, "id" | "lease">,
    a: AttemptRecord,
    outcome: AttemptOutcome,
    disableAfter: number,
    disabledReason: string,
    disabledAudit?: AuditRecord,
  ) {
    return this.sql.begin(async (tx) => {
      // The webhook first, as updateWebhook does: a disabling attempt fails the webhook's other
      // pending deliveries, and attempts of one webhook ending together must not lock a delivery
      // each and then wait for the other's.
      await tx`
        SELECT w.id FROM webhooks w JOIN webhook_deliveries d ON d.webhook_id = w.id
        WHERE d.id = ${claim.id} FOR UPDATE OF w`;
      const [d] = await tx<{ webhook_id: string; attempts_made: number }[]>`
        UPDATE webhook_deliveries SET
          attempts_made = attempts_made + 1,
          status = ${outcome.status},
          next_attempt_at = ${outcome.status === "pending" ? outcome.nextAttemptAt : null},
          leased_until = NULL,
          delivered_at = ${outcome.status === "delivered" ? a.attemptedAt : null}
        WHERE id = ${claim.id} AND status = 'pending' AND next_attempt_at = ${claim.lease}
        RETURNING webhook_id, attempts_made`;
      if (!d) return { recorded: false, disabled: false };
      await tx`
        INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, status_code, latency_ms, error)
        VALUES (${claim.id}, ${d.attempts_made}, ${a.attemptedAt}, ${a.statusCode}, ${a.latencyMs}, ${a.error})`;
      if (outcome.status === "delivered") {
        await tx`UPDATE webhooks SET consecutive_failures = 0 WHERE id = ${d.webhook_id}`;
        return { recorded: true, disabled: false };
      }
      const [w] = await tx<{ consecutive_failures: number; enabled: boolean }[]>`
        UPDATE webhooks SET consecutive_failures = consecutive_failures + 1 WHERE id = ${d.webhook_id}
        RETURNING consecutive_failures, enabled`;
      if (w?.enabled && w.consecutive_failures >= disableAfter) {
        await tx`UPDATE webhooks SET enabled = false, disabled_reason = ${disabledReason} WHERE id = ${d.webhook_id}`;
        await failPending(tx, d.webhook_id);
        if (disabledAudit) await insertAudit(tx, WEBHOOKS_AUDIT_TABLE, disabledAudit);
        return { recorded: true, disabled: true };
      }
      return { recorded: true, disabled: false };
    });
  }

  async pruneDeliveries(before: number, batch = PRUNE_BATCH, onBatch?: (deleted: number) => boolean) {
    // In batches, each its own short statement, so a month's backlog neither holds one long
    // transaction and its locks nor loads every id; counted in the database.
    let total = 0;
    for (;;) {
      const [{ n }] = (await this.sql`
        WITH gone AS (
          DELETE FROM webhook_deliveries WHERE id IN (
            SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ${before} LIMIT ${batch})
          RETURNING 1)
        SELECT count(*)::int AS n FROM gone`) as unknown as [{ n: number }];
      total += n;
      if (onBatch?.(n) === false || n < batch) return total;
    }
  }

  private async withAttempts(rows: DeliveryRow[]): Promise<DeliveryRecord[]> {
    if (rows.length === 0) return [];
    const attempts = await this.sql<AttemptRow[]>`
      SELECT delivery_id, attempted_at, status_code, latency_ms, error FROM webhook_attempts
      WHERE delivery_id = ANY(${rows.map((r) => r.id)}::text[])
      ORDER BY delivery_id, attempt`;
    const byDelivery = new Map<string, AttemptRecord[]>();
    for (const a of attempts) {
      const list = byDelivery.get(a.delivery_id) ?? [];
      list.push({
        attemptedAt: a.attempted_at,
        statusCode: a.status_code,
        latencyMs: a.latency_ms,
        error: a.error,
      });
      byDelivery.set(a.delivery_id, list);
    }
    return rows.map((r) => ({
      id: r.id,
      webhookId: r.webhook_id,
      workspaceId: r.workspace_id,
      eventId: r.event_id,
      eventType: r.event_type,
      occurredAt: r.occurred_at,
      dataJson: r.data_json,
      status: r.status,
      attempts: byDelivery.get(r.id) ?? [],
      nextAttemptAt: r.next_attempt_at,
      deliveredAt: r.delivered_at,
      createdAt: r.created_at,
      redeliveryOf: r.redelivery_of,
    }));
  }
}
