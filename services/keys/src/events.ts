import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { UNHANDLED } from "@latchkey/proto/codecs/wire/reader";
import { writeOr } from "@latchkey/proto/codecs/wire/writer";
import { KeyChangedSchema, type KeyVerified, KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { type Bus, type EventSink, type EventType, newId } from "@latchkey/runtime";
import type { KeyCache } from "./verify/key-cache.ts";

/** Every event the keys context emits, one function each. */

export const KEY_CHANGED = "events.keys.changed";
export const KEY_VERIFIED = "events.keys.verified";

/** For processes that record no analytics. */
export const noEvents: EventSink = {
  publish() {},
  flush: async () => {},
  stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
};

/** keys.v1.KeyVerified on events.keys.verified: its one encoder is this service's. */
export const keyVerifiedEvent: EventType<KeyVerified> = { subject: KEY_VERIFIED, encode: encodeKeyVerified };

/** One verification, for analytics. Appends to the sink's buffer: never waits, never throws. */
export function keyVerified(deps: { events: EventSink }, v: KeyVerified): void {
  if (deps.events === noEvents) return;
  // The id lets JetStream and the consumer drop a re-sent duplicate.
  const id = v.requestId ? `${v.requestId}:${v.keyId}` : newId("ver");
  deps.events.publish(keyVerifiedEvent, id, v);
}

/**
 * keys.v1.KeyVerified in binary, written with the runtime's one writer: one
 * per verification, where toBinary's reflection costs more than the rest of
 * publishing the event. The bytes are toBinary's for every message
 * (test/in-memory/fast-codecs.test.ts).
 */
export function encodeKeyVerified(v: KeyVerified): Uint8Array {
  return writeOr(KeyVerifiedSchema, v, (w) => {
    if (v.$unknown !== undefined) throw UNHANDLED;
    w.string(1, v.requestId)
      .bigint64(2, v.time)
      .string(3, v.workspaceId)
      .string(4, v.apiId)
      .string(5, v.keyId)
      .string(6, v.identityId)
      .string(7, v.externalId)
      .string(8, v.outcome);
    for (const tag of v.tags) w.optionalString(9, tag);
    w.bigint64(10, v.spentCredits).double(11, v.latency);
  });
}

export interface KeyChange {
  workspaceId: string;
  /** The changed key's hash (in workspaceId); without it every instance drops the workspace's keys. */
  hash?: string;
  keyId?: string;
  apiId?: string;
}

/**
 * A key or an API changed: this instance forgets it at once, and every other
 * instance does when the message arrives, before its next verification.
 */
export function keyChanged(deps: { bus: Bus; keyCache: KeyCache }, change: KeyChange): Promise<void> {
  deps.keyCache.invalidate(invalidated(change.workspaceId, change.hash ?? ""));
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
  // The caller answers only once the message is on its way to every instance (Bus.flushed).
  return deps.bus.flushed();
}

/** Applies every instance's KeyChanged to this instance's cache; returns the unsubscribe function. */
export function invalidateOnKeyChanges(bus: Bus, cache: KeyCache): () => void {
  return bus.subscribe(KEY_CHANGED, (data) => {
    let change: { workspaceId: string; hash: string } | undefined;
    try {
      change = fromBinary(KeyChangedSchema, data);
    } catch {
      // An unreadable message still means something changed: everything goes.
      change = undefined;
    }
    cache.invalidate(change && invalidated(change.workspaceId, change.hash));
  });
}

/**
 * What a KeyChanged drops: the key, else the workspace's every key (an API
 * deleted, many keys changed), never another workspace's; everything only
 * when it names no workspace.
 */
function invalidated(workspaceId: string, hash: string): { workspaceId: string; hash?: string } | undefined {
  if (workspaceId === "") return undefined;
  return hash === "" ? { workspaceId } : { workspaceId, hash };
}
