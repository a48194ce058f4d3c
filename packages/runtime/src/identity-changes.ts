import { create, fromBinary } from "@bufbuild/protobuf";
import { type IdentityChanged, IdentityChangedSchema } from "@latchkey/proto/identity/v1/events_pb";
import type { Bus } from "./bus.ts";

/**
 * The bus subject of identity's IdentityChanged: part of the identity context's contract, like its proto, so
 * that the identity service publishes on it and the keys service listens without importing each other.
 */
export const IDENTITY_CHANGED = "events.identity.changed";

/**
 * For consumers: calls `handler` with every IdentityChanged; returns the
 * unsubscribe function. An unreadable message arrives as an empty change
 * (no workspace), meaning "drop everything", since something did change.
 */
export function onIdentityChanged(bus: Bus, handler: (change: IdentityChanged) => void): () => void {
  return bus.subscribe(IDENTITY_CHANGED, (data) => {
    let change: IdentityChanged;
    try {
      change = fromBinary(IdentityChangedSchema, data);
    } catch {
      change = create(IdentityChangedSchema, {});
    }
    handler(change);
  });
}
