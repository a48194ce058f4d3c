import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  DeleteIdentityRequest,
  DeleteIdentityResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { publishDomainEvent, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, identityNotFound, visibleIdentity } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { referenceOf } from "../validation.ts";

/** Permanent: the identity and its limits go; keys linked to it keep working without the shared limits. */
export function deleteIdentity(deps: IdentityDeps) {
  return async (
    req: DeleteIdentityRequest,
  ): Promise<MessageInitShape<typeof DeleteIdentityResponseSchema>> => {
    const ref = referenceOf(req.identity, "/identity");
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["identity.*.delete_identity"]);
    const identity = await visibleIdentity(deps, caller, ref);
    const audit = succeeded(deps, caller, "identities.deleteIdentity", [
      { type: "identity", id: identity.id },
    ]);
    if (!(await deps.store.deleteIdentity(caller.workspaceId, identity.id, audit)))
      throw identityNotFound(ref);
    publishDomainEvent(deps, "identity.deleted", caller.workspaceId, {
      identityId: identity.id,
      externalId: identity.externalId,
    });
    await identityChanged(deps, {
      workspaceId: caller.workspaceId,
      identityId: identity.id,
      externalId: identity.externalId,
      deleted: true,
    });
    return {};
  };
}
