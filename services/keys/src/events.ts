import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { type Bus, type EventSink, newId } from "@latchkey/runtime";
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

/** One verification, by keys.v1.KeyVerified's field names (events.test.ts holds them to the message's). */
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
export function keyVerified(deps: { events: EventSink }, v: Verification): void {
  if (deps.events === noEvents) return;
  // The id lets JetStream and the consumer drop a re-sent duplicate.
  const id = v.requestId ? `${v.requestId}:${v.keyId}` : newId("ver");
  // In process (pnpm start's embedded analytics) the fields go as they are: Verification's are KeyVerified's.
  if (deps.events.publishFields) deps.events.publishFields(KEY_VERIFIED, id, v);
  else deps.events.publish(KEY_VERIFIED, id, encodeKeyVerified(v));
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
  const out = { buf: Buffer.allocUnsafe(size), at: 0 };
  if (v.requestId !== "") writeString(out, 1, v.requestId);
  if (v.time !== 0) {
    out.buf[out.at++] = 2 << 3;
    writeVarint(out, v.time);
  }
  if (v.workspaceId !== "") writeString(out, 3, v.workspaceId);
  if (v.apiId !== "") writeString(out, 4, v.apiId);
  if (v.keyId !== "") writeString(out, 5, v.keyId);
  if (v.identityId !== "") writeString(out, 6, v.identityId);
  if (v.externalId !== "") writeString(out, 7, v.externalId);
  if (v.outcome !== "") writeString(out, 8, v.outcome);
  for (const tag of v.tags) writeString(out, 9, tag);
  if (v.spentCredits !== 0) {
    out.buf[out.at++] = 10 << 3;
    writeVarint(out, v.spentCredits);
  }
  if (v.latency !== 0) {
    out.buf[out.at++] = (11 << 3) | 1;
    out.at = out.buf.writeDoubleLE(v.latency, out.at);
  }
  return out.buf.subarray(0, out.at);
}

/**
 * Where encodeKeyVerified writes. Its helpers are module functions, not closures: a closure
 * per event was two allocations and, under esbuild's keepNames (tsx, the bundle), two __name
 * calls per verification (1 % of pnpm start's CPU under the bench).
 */
interface Out {
  buf: Buffer;
  at: number;
}

function writeVarint(out: Out, value: number): void {
  const { buf } = out;
  if (value < 0 || !Number.isSafeInteger(value)) {
    // Two's complement in 64 bits, as int64 is written; never the case for times and credits.
    let big = BigInt.asUintN(64, BigInt(Math.trunc(value)));
    while (big > 127n) {
      buf[out.at++] = Number(big & 127n) | 128;
      big >>= 7n;
    }
    buf[out.at++] = Number(big);
    return;
  }
  while (value > 127) {
    buf[out.at++] = (value % 128) | 128;
    value = Math.floor(value / 128);
  }
  buf[out.at++] = value;
}

function writeString(out: Out, field: number, text: string): void {
  out.buf[out.at++] = (field << 3) | 2;
  writeVarint(out, Buffer.byteLength(text));
  out.at += out.buf.write(text, out.at, "utf8");
}

export interface KeyChange {
  workspaceId: string;
  /** The changed key's hash (in workspaceId); without it every instance drops its whole cache. */
  hash?: string;
  keyId?: string;
  apiId?: string;
}

/**
 * A key or an API changed: this instance forgets it at once, and every other
 * instance does when the message arrives, before its next verification.
 */
export function keyChanged(deps: { bus: Bus; keyCache: KeyCache }, change: KeyChange): Promise<void> {
  deps.keyCache.invalidate(change.hash ? { workspaceId: change.workspaceId, hash: change.hash } : undefined);
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
    let key: { workspaceId: string; hash: string } | undefined;
    try {
      const { workspaceId, hash } = fromBinary(KeyChangedSchema, data);
      key = hash !== "" && workspaceId !== "" ? { workspaceId, hash } : undefined;
    } catch {
      // An unreadable message still means something changed.
      key = undefined;
    }
    cache.invalidate(key);
  });
}
