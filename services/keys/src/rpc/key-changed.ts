import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { type DomainEventData, publishDomainEvent } from "@latchkey/runtime";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";

/** The domain events about one key; each carries its keyId and apiId. */
type KeyEvent = "key.created" | "key.updated" | "key.deleted" | "key.rerolled";

/**
 * What an operation does once its change to a key is committed: announces the change (its domain event, for
 * webhooks), then drops the key from every instance's caches (keyChanged) and only then lets the answer go.
 */
export async function keyChangeCommitted<T extends KeyEvent>(
  deps: KeysDeps,
  caller: Caller,
  key: { id: string; apiId: string; hash: string },
  event: T,
  data: Omit<DomainEventData[T], "keyId" | "apiId">,
): Promise<void> {
  const payload = { keyId: key.id, apiId: key.apiId, ...data } as DomainEventData[T];
  publishDomainEvent(deps, event, caller.workspaceId, payload);
  await keyChanged(deps, {
    workspaceId: caller.workspaceId,
    hash: key.hash,
    keyId: key.id,
    apiId: key.apiId,
  });
}
