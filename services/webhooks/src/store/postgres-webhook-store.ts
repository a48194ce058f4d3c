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
  type ClaimedDelivery,
  type DeliveryRecord,
  type DeliveryStatus,
  type EventRecord,
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
  sql`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL
      WHERE webhook_id = ${webhookId} AND status = 'pending'`;

/** Deliveries deleted per statement by pruneDeliveries. */
const PRUNE_BATCH = 5_000;

/** The webhooks context's audit records (migrations.ts, version 2). */
export const WEBHOOKS_AUDIT_TABLE = "webhooks_audit_log";

/**
 * The store in PostgreSQL (or PGlite in the embedded default). Every query names the workspace, so
 * nothing crosses workspaces; the delivery rows are the outbox the worker drains.
 */
export class PostgresWebhookStore extends PostgresAuditedStore implements WebhookStore {
  constructor(sql: Sql) {
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

  async intake(events: readonly EventRecord[], now: number, firstDelayMs = 0) {
    if (events.length === 0) return 0;
    return this.sql.begin(async (tx) => {
      let added = 0;
      for (const e of events) {
        const hooks = await tx<{ id: string }[]>`
          SELECT id FROM webhooks
          WHERE workspace_id = ${e.workspaceId} AND enabled AND ${e.type} = ANY(events)`;
        for (const h of hooks) {
          const rows = await tx`
            INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_type, occurred_at,
                                            data_json, status, next_attempt_at, created_at)
            VALUES (${newId("dlv")}, ${h.id}, ${e.workspaceId}, ${e.id}, ${e.type}, ${e.occurredAt},
                    ${e.dataJson}, 'pending', ${now + firstDelayMs}, ${now})
            ON CONFLICT (webhook_id, event_id) WHERE redelivery_of IS NULL DO NOTHING
            RETURNING id`;
          added += rows.length;
        }
      }
      return added;
    });
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
  ) {
    return this.audited(
      audit,
      async (tx) => {
        const rows = await tx<{ id: string }[]>`
          INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json,
                                          status, next_attempt_at, created_at, redelivery_of)
          SELECT ${id}, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json,
                 'pending', ${now + firstDelayMs}, ${now}, COALESCE(redelivery_of, id)
          FROM webhook_deliveries
          WHERE workspace_id = ${workspaceId} AND webhook_id = ${webhookId} AND id = ${deliveryId}
          RETURNING id`;
        return rows[0]?.id;
      },
      (made) => made !== undefined,
    );
  }

  async claimDue(
    now: number,
    limit: number,
    leaseMs: number,
    perWebhook?: { max: number; busy: ReadonlyMap<string, number> },
  ) {
    const sql = this.sql;
    const busy = [...(perWebhook?.busy ?? new Map<string, number>())];
    // Per webhook, its due deliveries ranked oldest first; a webhook's are taken only up to what it
    // may still have in flight. Ranked before locking, so rows another worker holds count too (this
    // worker takes fewer, never more).
    const capped = perWebhook
      ? sql`
        AND d.id IN (
          SELECT r.id FROM (
            SELECT d2.id, d2.webhook_id,
                   row_number() OVER (PARTITION BY d2.webhook_id ORDER BY d2.next_attempt_at, d2.id) AS rn
            FROM webhook_deliveries d2
            WHERE d2.status = 'pending' AND d2.next_attempt_at <= ${now}
          ) r
          LEFT JOIN unnest(${busy.map(([id]) => id)}::text[], ${busy.map(([, n]) => n)}::int[]) AS b(webhook_id, n)
            ON b.webhook_id = r.webhook_id
          WHERE r.rn <= ${perWebhook.max} - COALESCE(b.n, 0))`
      : sql``;
    const rows = await sql<(DeliveryRow & { url: string; sealed_secret: string; attempts_made: number })[]>`
      WITH due AS (
        SELECT d.id FROM webhook_deliveries d
        JOIN webhooks w ON w.id = d.webhook_id AND w.enabled
        WHERE d.status = 'pending' AND d.next_attempt_at <= ${now}
          ${capped}
        ORDER BY d.next_attempt_at
        LIMIT ${limit}
        FOR UPDATE OF d SKIP LOCKED
      )
      UPDATE webhook_deliveries d SET next_attempt_at = ${now + leaseMs}
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
        lease: now + leaseMs,
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

  async pruneDeliveries(before: number, batch = PRUNE_BATCH) {
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
      if (n < batch) return total;
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
