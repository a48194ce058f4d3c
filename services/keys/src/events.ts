import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KeyChangedSchema, KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { type Bus, type EventSink, newId } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";
import type { KeyCache } from "./key-cache.ts";

/** Every event the keys context emits, one function each. */

export const KEY_CHANGED = "events.keys.changed";
export const KEY_VERIFIED = "events.keys.verified";

/** For processes that record no analytics. */
export const noEvents: EventSink = {
  publish() {},
  flush: async () => {},
  stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
};

export interface Verification {
  requestId: string;
  time: number;
  workspaceId: string;
  apiId: string;
  keyId: string;
  identityId: string;
  externalId: string;
  /** The public code: VALID, USAGE_EXCEEDED, ... */
  outcome: string;
  tags: string[];
  spentCredits: number;
  latency: number;
}

/** One verification, for analytics. Appends to the sink's buffer: never waits, never throws. */
export function keyVerified(deps: Pick<KeysDeps, "events">, v: Verification): void {
  if (deps.events === noEvents) return;
  const data = toBinary(
    KeyVerifiedSchema,
    create(KeyVerifiedSchema, { ...v, time: BigInt(v.time), spentCredits: BigInt(v.spentCredits) }),
  );
  // The id lets JetStream and the consumer drop a re-sent duplicate.
  deps.events.publish(KEY_VERIFIED, v.requestId ? `${v.requestId}:${v.keyId}` : newId("ver"), data);
}

export interface KeyChange {
  workspaceId: string;
  /** The changed key's hash; without it every instance drops its whole cache. */
  hash?: string;
  keyId?: string;
  apiId?: string;
}

/**
 * A key or an API changed: this instance forgets it at once, and every other
 * instance does when the message arrives, before its next verification.
 */
export function keyChanged(deps: Pick<KeysDeps, "bus" | "keyCache">, change: KeyChange): void {
  deps.keyCache.invalidate(change.hash);
  deps.bus.publish(
    KEY_CHANGED,
    toBinary(
      KeyChangedSchema,
      create(KeyChangedSchema, {
        workspaceId: change.workspaceId,
        hash: change.hash ?? "",
        keyId: change.keyId ?? "",
        apiId: change.apiId ?? "",
      }),
    ),
  );
}

/** Applies every instance's KeyChanged to this instance's cache; returns the unsubscribe function. */
export function invalidateOnKeyChanges(bus: Bus, cache: KeyCache): () => void {
  return bus.subscribe(KEY_CHANGED, (data) => {
    let hash: string | undefined;
    try {
      hash = fromBinary(KeyChangedSchema, data).hash || undefined;
    } catch {
      // An unreadable message still means something changed.
      hash = undefined;
    }
    cache.invalidate(hash);
  });
}
