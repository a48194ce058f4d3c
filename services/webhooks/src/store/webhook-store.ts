/** What the webhooks context keeps: webhooks, deliveries and their attempts. Times are unix milliseconds. */
import type { AuditLogStore, AuditRecord } from "@latchkey/runtime";

export interface WebhookRecord {
  id: string;
  workspaceId: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  /** Why it was disabled automatically; null when it was not (or was enabled since). */
  disabledReason: string | null;
  /** The signing secret, sealed (secret.ts). */
  sealedSecret: string;
  /** Failed attempts since the last success (or since it was enabled). */
  consecutiveFailures: number;
  createdAt: number;
  updatedAt: number;
}

export interface WebhookUpdate {
  url?: string;
  events?: string[];
  description?: string;
  /** true also clears disabledReason and consecutiveFailures. */
  enabled?: boolean;
  updatedAt: number;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface AttemptRecord {
  attemptedAt: number;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/** The event a delivery carries, as it came (common.v1.DomainEvent). */
export interface EventRecord {
  id: string;
  type: string;
  workspaceId: string;
  occurredAt: number;
  dataJson: string;
}

export interface DeliveryRecord {
  id: string;
  webhookId: string;
  workspaceId: string;
  eventId: string;
  eventType: string;
  occurredAt: number;
  dataJson: string;
  status: DeliveryStatus;
  /** Oldest first. */
  attempts: AttemptRecord[];
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
  /** The delivery this one repeats (webhooks.redeliver), or null. */
  redeliveryOf: string | null;
}

/** A due delivery a worker holds until its lease ends, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  workspaceId: string;
  url: string;
  sealedSecret: string;
  eventId: string;
  eventType: string;
  occurredAt: number;
  dataJson: string;
  /** Attempts made before this one. */
  attemptsMade: number;
  /**
   * The end of this claim's lease (the next_attempt_at the claim set): an attempt is recorded only
   * while the delivery still holds it, so a worker whose lease ended and whose delivery another
   * worker took cannot write over that worker's result.
   */
  lease: number;
}

/** The caps a claim keeps, counted over every worker's deliveries in flight. */
export interface ClaimCaps {
  /** Attempts in flight to one workspace's webhooks at most. */
  perWorkspace: number;
  /** Attempts in flight to one webhook at most. */
  perWebhook: number;
}

export interface IntakeOptions {
  /** The retry schedule's first wait: a new delivery is due this long after it is written. */
  firstDelayMs?: number;
  /**
   * Pending deliveries a workspace may hold; past it its new deliveries are refused. The store's own
   * bound (its constructor's) when unset, else none.
   */
  maxPendingPerWorkspace?: number;
  /** Told, per workspace, how many of its deliveries the bound refused (once per workspace and call). */
  refused?: (workspaceId: string, deliveries: number) => void;
}

/** A redelivery refused because its workspace holds as many pending deliveries as it may. */
export const OUTBOX_FULL = Symbol("outbox full");

/** What became of a delivery after an attempt. */
export type AttemptOutcome =
  | { status: "delivered" }
  | { status: "pending"; nextAttemptAt: number }
  | { status: "failed" };

export interface PageQuery {
  limit: number;
  /** The last item of the previous page; undefined for the first. */
  after: string | undefined;
}

/**
 * Each management change takes its audit record and writes it in the change's own transaction,
 * only when the change is made (packages/runtime/src/audit.ts); so does the worker's disabling.
 */
export interface WebhookStore extends AuditLogStore {
  /** Inserts the webhook unless its workspace already has `max`; false when it has. */
  createWebhook(record: WebhookRecord, max: number, audit?: AuditRecord): Promise<boolean>;
  findWebhook(workspaceId: string, id: string): Promise<WebhookRecord | undefined>;
  /** Ordered by id (byte order); `after` is an id. */
  listWebhooks(workspaceId: string, page: PageQuery): Promise<WebhookRecord[]>;
  /**
   * False when there is no such webhook in the workspace. Disabling it (enabled: false) fails its
   * pending deliveries, with no further attempt; enabling it again does not bring them back.
   */
  updateWebhook(
    workspaceId: string,
    id: string,
    update: WebhookUpdate,
    audit?: AuditRecord,
  ): Promise<boolean>;
  /** Deletes the webhook with its deliveries; false when there is no such webhook in the workspace. */
  deleteWebhook(workspaceId: string, id: string, audit?: AuditRecord): Promise<boolean>;

  /**
   * One pending delivery, created at `now` and due `firstDelayMs` later (the retry schedule's first
   * wait), per enabled webhook of the event's workspace that wants its type; an event already taken
   * for a webhook is not taken again (idempotent on webhook and event id). A workspace holding
   * `maxPendingPerWorkspace` pending deliveries gets no more: the rest of its deliveries are
   * refused (told to `refused`), the earlier events of the batch first. All events in one
   * transaction. Answers how many deliveries were added.
   */
  intake(events: readonly EventRecord[], now: number, options?: IntakeOptions): Promise<number>;

  /**
   * The deliveries of a webhook of the workspace, newest first, with their attempts; `after` is the
   * cursor of the last delivery of the previous page (cursorOf). Empty for another workspace's webhook.
   */
  listDeliveries(
    workspaceId: string,
    webhookId: string,
    page: PageQuery,
    status?: DeliveryStatus,
  ): Promise<DeliveryRecord[]>;
  findDelivery(workspaceId: string, webhookId: string, id: string): Promise<DeliveryRecord | undefined>;
  /**
   * A new pending delivery, created at `now` and due `firstDelayMs` later, of the same event to the
   * same webhook; undefined when the delivery is not found, OUTBOX_FULL when the workspace already
   * holds `maxPendingPerWorkspace` pending deliveries (the store's own bound when unset, as intake's).
   */
  redeliver(
    workspaceId: string,
    webhookId: string,
    deliveryId: string,
    newId: string,
    now: number,
    audit?: AuditRecord,
    firstDelayMs?: number,
    maxPendingPerWorkspace?: number,
  ): Promise<string | undefined | typeof OUTBOX_FULL>;

  /**
   * Up to `limit` pending deliveries due at `now` to enabled webhooks, each held for `leaseMs` (its
   * next attempt moved to now + leaseMs, and marked leased until then) so no other worker takes it
   * meanwhile; a worker that dies leaves it to be taken again once the lease ends. Rows another
   * worker is claiming are skipped. With `caps`, the attempts in flight (deliveries leased by any
   * worker whose lease has not ended) are counted per workspace and per webhook and the claim
   * keeps each within its cap; the workspaces with due deliveries take turns, the one with the
   * fewest in flight first (then the oldest due), each its oldest due first, so one workspace's
   * slow receivers or backlog cannot take the slots every other workspace needs.
   */
  claimDue(now: number, limit: number, leaseMs: number, caps?: ClaimCaps): Promise<ClaimedDelivery[]>;
  /**
   * Records an attempt and what became of the delivery; counts the webhook's run of failures (a
   * success ends it) and, when a failure makes it reach `disableAfter`, disables the webhook with
   * `disabledReason`, fails its pending deliveries (this one included) with no further attempt, and
   * writes `disabledAudit` with it. Answers whether this attempt disabled it.
   * Only while the claim still holds the delivery (pending, its lease unchanged); otherwise nothing
   * changes and `recorded` is false.
   */
  recordAttempt(
    claim: Pick<ClaimedDelivery, "id" | "lease">,
    attempt: AttemptRecord,
    outcome: AttemptOutcome,
    disableAfter: number,
    disabledReason: string,
    disabledAudit?: AuditRecord,
  ): Promise<{ recorded: boolean; disabled: boolean }>;
  /**
   * Deletes delivered and failed deliveries created before `before`, `batch` (default 5,000) per
   * statement until none is left or `onBatch`, called with each statement's count, answers false;
   * answers how many.
   */
  pruneDeliveries(before: number, batch?: number, onBatch?: (deleted: number) => boolean): Promise<number>;
}

/** A delivery's page cursor: its creation time and id, the order of listDeliveries. */
export const cursorOf = (d: Pick<DeliveryRecord, "createdAt" | "id">) => `${d.createdAt}.${d.id}`;

/** The creation time and id of a cursor, or undefined when it is not one. */
export function parseCursor(cursor: string): { createdAt: number; id: string } | undefined {
  const dot = cursor.indexOf(".");
  if (dot <= 0) return undefined;
  const createdAt = Number(cursor.slice(0, dot));
  if (!Number.isSafeInteger(createdAt)) return undefined;
  return { createdAt, id: cursor.slice(dot + 1) };
}
