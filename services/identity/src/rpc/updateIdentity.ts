import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  UpdateIdentityRequest,
  UpdateIdentityResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions, succeeded } from "@latchkey/runtime";
import { validAllowList } from "@latchkey/runtime/allow-list";
import { authenticatedCaller, identityNotFound, visibleIdentity } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import type { IdentityUpdate } from "../store/identity-store.ts";
import { metaOf, ratelimitsOf, referenceOf } from "../validation.ts";
import { identityView } from "../views.ts";

export function updateIdentity(deps: IdentityDeps) {
  return async (
    req: UpdateIdentityRequest,
  ): Promise<MessageInitShape<typeof UpdateIdentityResponseSchema>> => {
    const input = validUpdateIdentity(req);
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["identity.*.update_identity"]);
    const found = await visibleIdentity(deps, caller, input.identity);
    const updated = await deps.store.updateIdentity(
      caller.workspaceId,
      found.id,
      { ...input.change, updatedAt: deps.clock.now() },
      succeeded(
        deps,
        caller,
        "identities.updateIdentity",
        [{ type: "identity", id: found.id }],
        [
          ...(input.change.meta !== undefined ? ["meta"] : []),
          ...(input.change.ratelimits !== undefined ? ["ratelimits"] : []),
          ...(input.change.ipAllowList !== undefined ? ["ipAllowList"] : []),
        ],
      ),
    );
    // Deleted between the lookup and the update.
    if (!updated) throw identityNotFound(input.identity);
    await identityChanged(deps, {
      workspaceId: caller.workspaceId,
      identityId: updated.id,
      externalId: updated.externalId,
    });
    return { identity: identityView(updated) };
  };
}

function validUpdateIdentity(req: UpdateIdentityRequest): {
  identity: string;
  change: Omit<IdentityUpdate, "updatedAt">;
} {
  const identity = referenceOf(req.identity, "/identity");
  const change: Omit<IdentityUpdate, "updatedAt"> = {};
  if (req.metaJson !== undefined) change.meta = metaOf(req.metaJson);
  if (req.ratelimits !== undefined) change.ratelimits = ratelimitsOf(req.ratelimits.ratelimits);
  if (req.ipAllowList !== undefined)
    change.ipAllowList = validAllowList(req.ipAllowList.entries, "/ipAllowList");
  return { identity, change };
}
