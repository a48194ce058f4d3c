import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
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
  // The id lets JetStream and the consumer drop a re-sent duplicate.
  deps.events.publish(
    KEY_VERIFIED,
    v.requestId ? `${v.requestId}:${v.keyId}` : newId("ver"),
    encodeKeyVerified(v),
  );
}

/**
 * keys.v1.KeyVerified in binary, written field by field into one buffer: one
 * per verification, so without create() and toBinary()'s reflection and
 * chunked writer (about 4.5 µs an event, against 1.5 with the publish). The bytes are toBinary's
 * for the same message (fields in number order, defaults left out);
 * events.test.ts holds the two equal.
 */
export function encodeKeyVerified(v: Verification): Uint8Array {
  // Upper bound: per field a tag (1), a length or int64 varint (at most 10) and 3 bytes per UTF-16 unit.
  let size = 11 * 11;
  for (const text of [v.requestId, v.workspaceId, v.apiId, v.keyId, v.identityId, v.externalId, v.outcome]) {
    size += 3 * text.length;
  }
  for (const tag of v.tags) size += 11 + 3 * tag.length;
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  const varint = (value: number) => {
    if (value < 0 || !Number.isSafeInteger(value)) {
      // Two's complement in 64 bits, as int64 is written; never the case for times and credits.
      let big = BigInt.asUintN(64, BigInt(Math.trunc(value)));
      while (big > 127n) {
        buf[at++] = Number(big & 127n) | 128;
        big >>= 7n;
      }
      buf[at++] = Number(big);
      return;
    }
    while (value > 127) {
      buf[at++] = (value % 128) | 128;
      value = Math.floor(value / 128);
    }
    buf[at++] = value;
  };
  const string = (field: number, text: string) => {
    buf[at++] = (field << 3) | 2;
    varint(Buffer.byteLength(text));
    at += buf.write(text, at, "utf8");
  };
  if (v.requestId !== "") string(1, v.requestId);
  if (v.time !== 0) {
    buf[at++] = 2 << 3;
    varint(v.time);
  }
  if (v.workspaceId !== "") string(3, v.workspaceId);
  if (v.apiId !== "") string(4, v.apiId);
  if (v.keyId !== "") string(5, v.keyId);
  if (v.identityId !== "") string(6, v.identityId);
  if (v.externalId !== "") string(7, v.externalId);
  if (v.outcome !== "") string(8, v.outcome);
  for (const tag of v.tags) string(9, tag);
  if (v.spentCredits !== 0) {
    buf[at++] = 10 << 3;
    varint(v.spentCredits);
  }
  if (v.latency !== 0) {
    buf[at++] = (11 << 3) | 1;
    at = buf.writeDoubleLE(v.latency, at);
  }
  return buf.subarray(0, at);
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
