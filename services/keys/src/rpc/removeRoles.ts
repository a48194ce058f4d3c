import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RemoveRolesRequest, RemoveRolesResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, publishDomainEvent, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { requireRoles, rolesView } from "../rbac.ts";
import { grantChangePermissions, removing } from "../rbac-changes.ts";
import { validKeyId, validRoleNames } from "./validation.ts";

/**
 * keys.removeRoles: removes roles by name; a role the key does not have is a
 * no-op, a name that names no role is ROLE_NOT_FOUND. Needs update_key and
 * rbac.*.remove_role_from_key (rbac-changes.ts). Answers the key's remaining roles.
 */
export function removeRoles(deps: KeysDeps) {
  return async (req: RemoveRolesRequest): Promise<MessageInitShape<typeof RemoveRolesResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const keyId = validKeyId(req.keyId);
    const names = validRoleNames(req.roles, 1);
    const key = await visibleKey(deps, caller, keyId);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      ...grantChangePermissions({ roles: removing(names) }),
    ]);
    await requireRoles(deps, caller, names);
    const updated = await deps.store.changeKeyList(
      key.id,
      "roles",
      { add: [], remove: names },
      deps.clock.now(),
      succeeded(deps, caller, "keys.removeRoles", [keyResource(key.id), apiResource(key.apiId)], ["roles"]),
    );
    if (!updated) throw keyNotFound();
    publishDomainEvent(deps, "key.updated", caller.workspaceId, {
      keyId: key.id,
      apiId: key.apiId,
      fields: ["roles"],
    });
    await keyChanged(deps, {
      workspaceId: caller.workspaceId,
      hash: key.hash,
      keyId: key.id,
      apiId: key.apiId,
    });
    return { roles: await rolesView(deps, caller, updated.roles) };
  };
}
