import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SetPermissionsRequest, SetPermissionsResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, publishDomainEvent, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { ensurePermissions, permissionsView } from "../rbac.ts";
import { grantChangePermissions, replacing } from "../rbac-changes.ts";
import { validKeyId, validSlugs } from "./validation.ts";

/**
 * keys.setPermissions: the key's direct permissions become exactly these slugs
 * in one write (an empty list clears them). Needs update_key,
 * rbac.*.remove_permission_from_key and, unless the list is empty,
 * rbac.*.add_permission_to_key (rbac-changes.ts). A missing slug is created
 * only when the root key holds rbac.*.create_permission, and nothing changes
 * if it does not. Answers the key's direct permissions.
 */
export function setPermissions(deps: KeysDeps) {
  return async (
    req: SetPermissionsRequest,
  ): Promise<MessageInitShape<typeof SetPermissionsResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const keyId = validKeyId(req.keyId);
    const slugs = validSlugs(req.permissions, 0);
    const key = await visibleKey(deps, caller, keyId);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      ...grantChangePermissions({ permissions: replacing(slugs) }),
    ]);
    await ensurePermissions(deps, caller, slugs);
    const updated = await deps.store.updateKey(
      key.id,
      { permissions: slugs, updatedAt: deps.clock.now() },
      succeeded(
        deps,
        caller,
        "keys.setPermissions",
        [keyResource(key.id), apiResource(key.apiId)],
        ["permissions"],
      ),
    );
    if (!updated) throw keyNotFound();
    publishDomainEvent(deps, "key.updated", caller.workspaceId, {
      keyId: key.id,
      apiId: key.apiId,
      fields: ["permissions"],
    });
    await keyChanged(deps, {
      workspaceId: caller.workspaceId,
      hash: key.hash,
      keyId: key.id,
      apiId: key.apiId,
    });
    return { permissions: await permissionsView(deps, caller, updated.permissions) };
  };
}
