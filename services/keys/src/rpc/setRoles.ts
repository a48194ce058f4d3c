import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SetRolesRequest, SetRolesResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, publishDomainEvent, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { requireRoles, rolesView } from "../rbac.ts";
import { grantChangePermissions, replacing } from "../rbac-changes.ts";
import { validKeyId, validRoleNames } from "./validation.ts";

/**
 * keys.setRoles: the key's roles become exactly these, in one write (an empty
 * list clears them); a name that names no role is ROLE_NOT_FOUND and nothing
 * changes. Needs update_key, rbac.*.remove_role_from_key and, unless the list
 * is empty, rbac.*.add_role_to_key (rbac-changes.ts). Answers the key's roles.
 */
export function setRoles(deps: KeysDeps) {
  return async (req: SetRolesRequest): Promise<MessageInitShape<typeof SetRolesResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const keyId = validKeyId(req.keyId);
    const names = validRoleNames(req.roles, 0);
    const key = await visibleKey(deps, caller, keyId);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      ...grantChangePermissions({ roles: replacing(names) }),
    ]);
    const roles = (await requireRoles(deps, caller, names)).map((r) => r.name);
    const updated = await deps.store.updateKey(
      key.id,
      { roles, updatedAt: deps.clock.now() },
      succeeded(deps, caller, "keys.setRoles", [keyResource(key.id), apiResource(key.apiId)], ["roles"]),
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
