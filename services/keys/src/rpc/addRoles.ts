import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AddRolesRequest, AddRolesResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, publishDomainEvent, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { requireRoles, rolesView } from "../rbac.ts";
import { adding, grantChangePermissions } from "../rbac-changes.ts";
import { validKeyId, validRoleNames } from "./validation.ts";

/**
 * keys.addRoles: adds existing roles by name (ROLE_NOT_FOUND naming the first
 * that does not exist, and nothing changes); one the key has is a no-op.
 * Answers the key's roles.
 */
export function addRoles(deps: KeysDeps) {
  return async (req: AddRolesRequest): Promise<MessageInitShape<typeof AddRolesResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const keyId = validKeyId(req.keyId);
    const names = validRoleNames(req.roles, 1);
    const key = await visibleKey(deps, caller, keyId);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      ...grantChangePermissions({ roles: adding(names) }),
    ]);
    const roles = await requireRoles(deps, caller, names);
    const add = roles.map((r) => r.name);
    const updated = await deps.store.changeKeyList(
      key.id,
      "roles",
      { add, remove: [] },
      deps.clock.now(),
      succeeded(deps, caller, "keys.addRoles", [keyResource(key.id), apiResource(key.apiId)], ["roles"]),
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
