import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import type { Bus } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";
import type { KeyCache } from "./key-cache.ts";

/** Every event the keys context emits, one function each. */

export const KEY_CHANGED = "events.keys.changed";

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
