import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  RemovePermissionsRequest,
  RemovePermissionsResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { need, publishDomainEvent, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { permissionsView } from "../rbac.ts";
import { grantChangePermissions, removing } from "../rbac-changes.ts";
import { validKeyId, validSlugs } from "./validation.ts";

/**
 * keys.removePermissions: removes direct permissions by slug; one the key does
 * not hold is a no-op, and permissions reached through roles are untouched.
 * Answers the key's direct permissions.
 */
export function removePermissions(deps: KeysDeps) {
  return async (
    req: RemovePermissionsRequest,
  ): Promise<MessageInitShape<typeof RemovePermissionsResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const keyId = validKeyId(req.keyId);
    const slugs = validSlugs(req.permissions, 1);
    const key = await visibleKey(deps, caller, keyId);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      ...grantChangePermissions({ permissions: removing(slugs) }),
    ]);
    const updated = await deps.store.changeKeyList(
      key.id,
      "permissions",
      { add: [], remove: slugs },
      deps.clock.now(),
      succeeded(
        deps,
        caller,
        "keys.removePermissions",
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
