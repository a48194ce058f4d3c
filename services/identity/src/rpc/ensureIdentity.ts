import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  EnsureIdentityRequest,
  EnsureIdentityResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { newId, publishDomainEvent } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { externalIdOf } from "../validation.ts";
import { identityView } from "../views.ts";

/**
 * For keys.createKey and keys.updateKey with an externalId. No root-key
 * permission of its own: the keys service authorized the key operation, and
 * Unkey's v2 API asks nothing more of it.
 */
export function ensureIdentity(deps: IdentityDeps) {
  return async (
    req: EnsureIdentityRequest,
  ): Promise<MessageInitShape<typeof EnsureIdentityResponseSchema>> => {
    const externalId = externalIdOf(req.externalId);
    const caller = authenticatedCaller(req);
    const now = deps.clock.now();
    const { created, identity } = await deps.store.insertIdentity({
      id: newId("id"),
      workspaceId: caller.workspaceId,
      externalId,
      meta: null,
      ratelimits: [],
      ipAllowList: [],
      createdAt: now,
      updatedAt: now,
    });
    if (created) {
      // Created for a key (keys.createKey, updateKey, migrateKeys): that operation's audit record names it.
      publishDomainEvent(deps, "identity.created", caller.workspaceId, {
        identityId: identity.id,
        externalId: identity.externalId,
      });
      await identityChanged(deps, {
        workspaceId: caller.workspaceId,
        identityId: identity.id,
        externalId: identity.externalId,
      });
    }
    return { identity: identityView(identity), created };
  };
}
