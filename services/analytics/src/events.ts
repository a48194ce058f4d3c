import { fromBinary, type Message } from "@bufbuild/protobuf";
import { EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import { type KeyVerified, KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { type RatelimitChecked, RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import type { RatelimitCheck, Verification } from "./store/analytics-store.ts";

/** The events analytics consumes. It emits none. */
export const KEY_VERIFIED = "events.keys.verified";
export const RATELIMIT_CHECKED = "events.ratelimit.checked";

export type AnalyticsEvent =
  | { kind: "verification"; row: Verification }
  | { kind: "ratelimit"; row: RatelimitCheck }
  | { kind: "ignored" };

/**
 * Decodes one JetStream message: an EventBatch of the subject's events when
 * the publisher marked it so (header Latchkey-Event-Batch), else a single
 * event (as publishers before batching sent them). Throws on bytes that are
 * not that.
 */
export function decodeMessage(
  subject: string,
  id: string,
  data: Uint8Array,
  batch: boolean,
): AnalyticsEvent[] {
  if (!batch) return [decodeEvent(subject, id, data)];
  return fromBinary(EventBatchSchema, data).events.map((e) => decodeEvent(subject, e.id, e.data));
}

/**
 * Decodes one event (protobuf-es: analytics reads each event once, off every
 * request's path). `id` (the JetStream message id the publisher set) stands in
 * for a missing request id so dedupe still works. Throws on bytes that are not
 * the subject's message.
 */
export function decodeEvent(subject: string, id: string, data: Uint8Array): AnalyticsEvent {
  switch (subject) {
    case KEY_VERIFIED:
      return verification(id, fromBinary(KeyVerifiedSchema, data));
    case RATELIMIT_CHECKED:
      return ratelimitCheck(id, fromBinary(RatelimitCheckedSchema, data));
    default:
      return { kind: "ignored" };
  }
}

/**
 * An event's message, decoded or handed over in this process (EventSink.publish
 * to an in-process sink): the same row either way.
 */
export function eventOf(subject: string, id: string, message: Message): AnalyticsEvent {
  switch (subject) {
    case KEY_VERIFIED:
      return verification(id, message as KeyVerified);
    case RATELIMIT_CHECKED:
      return ratelimitCheck(id, message as RatelimitChecked);
    default:
      return { kind: "ignored" };
  }
}

function verification(id: string, e: KeyVerified): AnalyticsEvent {
  return {
    kind: "verification",
    row: {
      requestId: e.requestId || id,
      time: Number(e.time),
      workspaceId: e.workspaceId,
      apiId: e.apiId,
      keyId: e.keyId,
      identityId: e.identityId,
      externalId: e.externalId,
      outcome: e.outcome,
      tags: [...new Set(e.tags)],
      spentCredits: Number(e.spentCredits),
      latency: e.latency,
    },
  };
}

function ratelimitCheck(id: string, e: RatelimitChecked): AnalyticsEvent {
  return {
    kind: "ratelimit",
    row: {
      // One row per check: the checks of one multiLimit share a request id, and their
      // message ids (requestId:index) tell them apart, so dedupe never merges them.
      requestId: id || e.requestId,
      time: Number(e.time),
      workspaceId: e.workspaceId,
      namespaceId: e.namespaceId,
      identifier: e.identifier,
      passed: e.passed,
      limit: Number(e.limit),
      remaining: Number(e.remaining),
      reset: Number(e.reset),
      cost: Number(e.cost),
      overrideId: e.overrideId,
      latency: e.latency,
      ...(e.count > 1 ? { count: e.count } : {}),
    },
  };
}
