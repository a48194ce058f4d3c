// What happened in a workspace that other systems may be told of (webhooks): one message shape,
// common.v1.DomainEvent, published on one subject by the context where it happened.
import { hash } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { type DomainEvent, DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import type { Clock } from "./clock.ts";
import type { EventSink, EventType } from "./event-sink.ts";
import { newId } from "./ids.ts";

export const DOMAIN_EVENT_SUBJECT = "events.domain";

export const DOMAIN_EVENT: EventType<DomainEvent> = {
  subject: DOMAIN_EVENT_SUBJECT,
  encode: (message) => toBinary(DomainEventSchema, message),
};

/**
 * Every event type, and the fields of its data object. Ids only, and counts: never key material,
 * secrets or meta values (a webhook receiver asks the API for more).
 */
export interface DomainEventData {
  /** keys.createKey (and each key keys.migrateKeys imports). */
  "key.created": { keyId: string; apiId: string };
  /** Any change to a key: its fields, credits, permissions or roles. `fields` names what changed. */
  "key.updated": { keyId: string; apiId: string; fields: string[] };
  "key.deleted": { keyId: string; apiId: string; permanent: boolean };
  /** The old key keeps working until `expiresAt` (unix ms; null: it stopped at once). */
  "key.rerolled": { keyId: string; apiId: string; newKeyId: string; expiresAt: number | null };
  /**
   * A key expires within its API's `expiringNoticeDays` (default 7): once per key and expiry (a
   * changed expiry is announced again). `expiresAt`: unix ms.
   */
  "key.expiring": { keyId: string; apiId: string; expiresAt: number; days: number };
  /**
   * A key was reported leaked (`source`: "github", a secret-scanning report, or "report",
   * keys.reportLeak) and, as its API's leakPolicy says, "revoked" (disabled) or "flagged" (still
   * working). `url`: where it was found, as the report said ("" when it said nothing). Once per key.
   */
  "key.leaked": {
    keyId: string;
    apiId: string;
    source: "github" | "report";
    action: "revoked" | "flagged";
    url: string;
  };
  /**
   * A key's balance fell below the configured fraction of its refill amount (or, without a refill,
   * of the balance it was last given), or to one of the key's own thresholds or below: at most once
   * per key, threshold and credit period. threshold: in credits; percent: of that baseline.
   */
  "credits.low": { keyId: string; apiId: string; remaining: number; threshold: number; percent?: number };
  /** A key spent its last credit: at most once per key and refill period. */
  "credits.exhausted": { keyId: string; apiId: string; remaining: number };
  /** A limit denied a request: at most once per namespace, identifier and window. */
  "ratelimit.exceeded": {
    namespace: string;
    identifier: string;
    limit: number;
    /** Milliseconds. */
    duration: number;
    /** Unix ms of the start of the window in which the limit was first exceeded. */
    windowStart: number;
  };
  "identity.created": { identityId: string; externalId: string };
  "identity.deleted": { identityId: string; externalId: string };
}

export type DomainEventType = keyof DomainEventData;

export const DOMAIN_EVENT_TYPES = [
  "key.created",
  "key.updated",
  "key.deleted",
  "key.rerolled",
  "key.leaked",
  "key.expiring",
  "credits.low",
  "credits.exhausted",
  "ratelimit.exceeded",
  "identity.created",
  "identity.deleted",
] as const satisfies readonly DomainEventType[];

/**
 * A DomainEvent of `type` in `workspaceId`. `id` is given where the event must be one per
 * something (its repeats then carry the same id and are delivered once); otherwise it is new.
 */
export function domainEvent<T extends DomainEventType>(
  type: T,
  workspaceId: string,
  data: DomainEventData[T],
  occurredAt: number,
  id: string = newId("evt"),
): DomainEvent {
  return create(DomainEventSchema, {
    id,
    type,
    workspaceId,
    occurredAt: BigInt(occurredAt),
    dataJson: JSON.stringify(data),
  });
}

/**
 * The id of the one event of `type` about `parts` (a key and its period, a counter and its
 * window): every process that sees the same thing derives the same id, so its repeats are
 * delivered once. A hash, so no part (an identifier may be an e-mail address) shows in it.
 */
export function domainEventId(type: DomainEventType, ...parts: readonly (string | number)[]): string {
  return `evt_${hash("sha256", [type, ...parts].join("\u001f"), "base64url").slice(0, 22)}`;
}

/** Publishes a change other systems may be told of (webhooks), once it is committed: an append to the sink's buffer. */
export function publishDomainEvent<T extends DomainEventType>(
  deps: { events: EventSink; clock: Clock },
  type: T,
  workspaceId: string,
  data: DomainEventData[T],
): void {
  const event = domainEvent(type, workspaceId, data, deps.clock.now());
  deps.events.publish(DOMAIN_EVENT, event.id, event);
}
