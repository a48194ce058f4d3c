import { type AuditQuery, type AuditRecord, MemoryAuditLog, newId } from "@latchkey/runtime";
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

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const clone = <T>(value: T): T => structuredClone(value);

/** The store in memory, for unit tests: the same answers as PostgreSQL (testing/webhook-store.suite.ts). */
export class MemoryWebhookStore implements WebhookStore {
  private webhooks = new Map<string, WebhookRecord>();
  private deliveries = new Map<string, DeliveryRecord>();
  /** Each first delivery's webhook and event (PostgreSQL's webhook_deliveries_once). */
  private firsts = new Set<string>();
  /** Leased deliveries and when their lease ends (PostgreSQL's leased_until). */
  private leases = new Map<string, number>();
  readonly audit = new MemoryAuditLog();

  /** As PostgresWebhookStore's: intake's bound when its caller gives none. */
  constructor(private readonly bounds: { maxPendingPerWorkspace?: number } = {}) {}

  recordAudit(record: AuditRecord): Promise<void> {
    return this.audit.recordAudit(record);
  }

  listAudit(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]> {
    return this.audit.listAudit(workspaceId, query);
  }

  async createWebhook(record: WebhookRecord, max: number, audit?: AuditRecord) {
    const count = [...this.webhooks.values()].filter((w) => w.workspaceId === record.workspaceId).length;
    if (count >= max) return false;
    this.webhooks.set(record.id, clone(record));
    this.audit.add(audit);
    return true;
  }

  async findWebhook(workspaceId: string, id: string) {
    const w = this.webhooks.get(id);
    return w && w.workspaceId === workspaceId ? clone(w) : undefined;
  }

  async listWebhooks(workspaceId: string, page: PageQuery) {
    return [...this.webhooks.values()]
      .filter((w) => w.workspaceId === workspaceId && (page.after === undefined || w.id > page.after))
      .sort((a, b) => byteOrder(a.id, b.id))
      .slice(0, page.limit)
      .map(clone);
  }

  async updateWebhook(workspaceId: string, id: string, update: WebhookUpdate, audit?: AuditRecord) {
    const w = this.webhooks.get(id);
    if (!w || w.workspaceId !== workspaceId) return false;
    if (update.url !== undefined) w.url = update.url;
    if (update.events !== undefined) w.events = [...update.events];
    if (update.description !== undefined) w.description = update.description;
    if (update.enabled !== undefined) {
      if (update.enabled) {
        w.disabledReason = null;
        w.consecutiveFailures = 0;
      }
      w.enabled = update.enabled;
      if (!update.enabled) this.failPending(id);
    }
    w.updatedAt = update.updatedAt;
    this.audit.add(audit);
    return true;
  }

  async deleteWebhook(workspaceId: string, id: string, audit?: AuditRecord) {
    const w = this.webhooks.get(id);
    if (!w || w.workspaceId !== workspaceId) return false;
    this.webhooks.delete(id);
    for (const [dId, d] of this.deliveries) {
      if (d.webhookId === id) {
        this.deliveries.delete(dId);
        this.leases.delete(dId);
        if (d.redeliveryOf === null) this.firsts.delete(`${id}\u0000${d.eventId}`);
      }
    }
    this.audit.add(audit);
    return true;
  }

  async intake(events: readonly EventRecord[], now: number, options: IntakeOptions = {}) {
    const result = { added: 0, refused: new Map<string, number>() };
    const max =
      options.maxPendingPerWorkspace ?? this.bounds.maxPendingPerWorkspace ?? Number.POSITIVE_INFINITY;
    const seen = new Set<string>();
    const room = new Map<string, number>();
    for (const e of events) {
      const key = `${e.workspaceId}\u0000${e.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const hooks = [...this.webhooks.values()]
        .filter((w) => w.workspaceId === e.workspaceId && w.enabled && w.events.includes(e.type))
        .sort((a, b) => byteOrder(a.id, b.id));
      for (const w of hooks) {
        if (this.firsts.has(`${w.id}\u0000${e.id}`)) continue;
        let left = room.get(e.workspaceId);
        if (left === undefined) {
          const pending = [...this.deliveries.values()].filter(
            (d) => d.workspaceId === e.workspaceId && d.status === "pending",
          ).length;
          left = Math.max(0, max - pending);
        }
        if (left <= 0) {
          result.refused.set(e.workspaceId, (result.refused.get(e.workspaceId) ?? 0) + 1);
          room.set(e.workspaceId, 0);
          continue;
        }
        room.set(e.workspaceId, left - 1);
        this.firsts.add(`${w.id}\u0000${e.id}`);
        const id = newId("dlv");
        this.deliveries.set(id, {
          id,
          webhookId: w.id,
          workspaceId: w.workspaceId,
          eventId: e.id,
          eventType: e.type,
          occurredAt: e.occurredAt,
          dataJson: e.dataJson,
          status: "pending",
          attempts: [],
          nextAttemptAt: now + (options.firstDelayMs ?? 0),
          deliveredAt: null,
          createdAt: now,
          redeliveryOf: null,
        });
        result.added++;
      }
    }
    for (const [workspaceId, n] of result.refused) options.refused?.(workspaceId, n);
    return result.added;
  }

  async listDeliveries(workspaceId: string, webhookId: string, page: PageQuery, status?: DeliveryStatus) {
    const after = page.after === undefined ? undefined : parseCursor(page.after);
    if (page.after !== undefined && after === undefined) return [];
    return [...this.deliveries.values()]
      .filter(
        (d) =>
          d.workspaceId === workspaceId &&
          d.webhookId === webhookId &&
          (status === undefined || d.status === status) &&
          (after === undefined ||
            d.createdAt < after.createdAt ||
            (d.createdAt === after.createdAt && byteOrder(d.id, after.id) < 0)),
      )
      .sort((a, b) => b.createdAt - a.createdAt || byteOrder(b.id, a.id))
      .slice(0, page.limit)
      .map(clone);
  }

  async findDelivery(workspaceId: string, webhookId: string, id: string) {
    const d = this.deliveries.get(id);
    return d && d.workspaceId === workspaceId && d.webhookId === webhookId ? clone(d) : undefined;
  }

  async redeliver(
    workspaceId: string,
    webhookId: string,
    deliveryId: string,
    newId: string,
    now: number,
    audit?: AuditRecord,
    firstDelayMs = 0,
    maxPendingPerWorkspace?: number,
  ) {
    const d = this.deliveries.get(deliveryId);
    if (!d || d.workspaceId !== workspaceId || d.webhookId !== webhookId) return undefined;
    const max = maxPendingPerWorkspace ?? this.bounds.maxPendingPerWorkspace ?? Number.POSITIVE_INFINITY;
    const pending = [...this.deliveries.values()].filter(
      (x) => x.workspaceId === workspaceId && x.status === "pending",
    ).length;
    if (pending >= max) return OUTBOX_FULL;
    this.deliveries.set(newId, {
      ...clone(d),
      id: newId,
      status: "pending",
      attempts: [],
      nextAttemptAt: now + firstDelayMs,
      deliveredAt: null,
      createdAt: now,
      redeliveryOf: d.redeliveryOf ?? d.id,
    });
    this.audit.add(audit);
    return newId;
  }

  async claimDue(now: number, limit: number, leaseMs: number, caps?: ClaimCaps) {
    const byDue = (a: DeliveryRecord, b: DeliveryRecord) =>
      (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0) || byteOrder(a.id, b.id);
    const due = [...this.deliveries.values()]
      .filter((d) => {
        const w = this.webhooks.get(d.webhookId);
        return d.status === "pending" && d.nextAttemptAt !== null && d.nextAttemptAt <= now && w?.enabled;
      })
      .sort(byDue);
    let chosen: DeliveryRecord[];
    if (!caps) chosen = due.slice(0, limit);
    else {
      // As PostgreSQL's claim: in flight counted from unexpired leases, each webhook's oldest due up
      // to its cap, each workspace's up to its cap, by turns (fewest in flight first, then oldest due).
      const busyWs = new Map<string, number>();
      const busyHook = new Map<string, number>();
      for (const [id, until] of this.leases) {
        const d = this.deliveries.get(id);
        if (d?.status !== "pending" || until <= now) continue;
        busyWs.set(d.workspaceId, (busyWs.get(d.workspaceId) ?? 0) + 1);
        busyHook.set(d.webhookId, (busyHook.get(d.webhookId) ?? 0) + 1);
      }
      const takenHook = new Map<string, number>();
      const rankWs = new Map<string, number>();
      const candidates: { d: DeliveryRecord; key: number }[] = [];
      for (const d of due) {
        const busy = busyWs.get(d.workspaceId) ?? 0;
        const hook = (busyHook.get(d.webhookId) ?? 0) + (takenHook.get(d.webhookId) ?? 0);
        if (hook >= caps.perWebhook) continue;
        const rank = (rankWs.get(d.workspaceId) ?? 0) + 1;
        if (busy + rank > caps.perWorkspace) continue;
        takenHook.set(d.webhookId, (takenHook.get(d.webhookId) ?? 0) + 1);
        rankWs.set(d.workspaceId, rank);
        candidates.push({ d, key: busy + rank });
      }
      chosen = candidates
        .sort((a, b) => a.key - b.key || byDue(a.d, b.d))
        .slice(0, limit)
        .map((c) => c.d);
    }
    return chosen.map((d): ClaimedDelivery => {
      d.nextAttemptAt = now + leaseMs;
      this.leases.set(d.id, now + leaseMs);
      const w = this.webhooks.get(d.webhookId)!;
      return {
        id: d.id,
        webhookId: d.webhookId,
        workspaceId: d.workspaceId,
        url: w.url,
        sealedSecret: w.sealedSecret,
        eventId: d.eventId,
        eventType: d.eventType,
        occurredAt: d.occurredAt,
        dataJson: d.dataJson,
        attemptsMade: d.attempts.length,
        lease: now + leaseMs,
      };
    });
  }

  async recordAttempt(
    claim: Pick<ClaimedDelivery, "id" | "lease">,
    attempt: AttemptRecord,
    outcome: AttemptOutcome,
    disableAfter: number,
    disabledReason: string,
    disabledAudit?: AuditRecord,
  ) {
    const d = this.deliveries.get(claim.id);
    if (d?.status !== "pending" || d.nextAttemptAt !== claim.lease) {
      return { recorded: false, disabled: false };
    }
    this.leases.delete(d.id);
    d.attempts.push({ ...attempt });
    d.status = outcome.status;
    d.nextAttemptAt = outcome.status === "pending" ? outcome.nextAttemptAt : null;
    if (outcome.status === "delivered") d.deliveredAt = attempt.attemptedAt;
    const w = this.webhooks.get(d.webhookId);
    if (!w) return { recorded: true, disabled: false };
    if (outcome.status === "delivered") {
      w.consecutiveFailures = 0;
      return { recorded: true, disabled: false };
    }
    w.consecutiveFailures++;
    if (w.enabled && w.consecutiveFailures >= disableAfter) {
      w.enabled = false;
      w.disabledReason = disabledReason;
      this.failPending(w.id);
      this.audit.add(disabledAudit);
      return { recorded: true, disabled: true };
    }
    return { recorded: true, disabled: false };
  }

  async pruneDeliveries(before: number, batch = 5_000, onBatch?: (deleted: number) => boolean) {
    let total = 0;
    for (;;) {
      let n = 0;
      for (const [id, d] of this.deliveries) {
        if (n === batch) break;
        if (d.status !== "pending" && d.createdAt < before) {
          this.deliveries.delete(id);
          if (d.redeliveryOf === null) this.firsts.delete(`${d.webhookId}\u0000${d.eventId}`);
          n++;
        }
      }
      total += n;
      if (onBatch?.(n) === false || n < batch) return total;
    }
  }

  /** A disabled webhook's pending deliveries end failed, with no further attempt (as in PostgreSQL). */
  private failPending(webhookId: string) {
    for (const d of this.deliveries.values()) {
      if (d.webhookId === webhookId && d.status === "pending") {
        this.leases.delete(d.id);
        d.status = "failed";
        d.nextAttemptAt = null;
      }
    }
  }

  /** For tests: every delivery, as stored. */
  allDeliveries(): DeliveryRecord[] {
    return [...this.deliveries.values()].map(clone);
  }
}
