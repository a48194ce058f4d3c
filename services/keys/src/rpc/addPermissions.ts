import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AddPermissionsRequest, AddPermissionsResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, publishDomainEvent, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { ensurePermissions, permissionsView } from "../rbac.ts";
import { adding, grantChangePermissions } from "../rbac-changes.ts";
import { validKeyId, validSlugs } from "./validation.ts";

/**
 * keys.addPermissions: adds direct permissions by slug; one the key holds
 * already is a no-op. A missing slug is created only when the root key holds
 * rbac.*.create_permission. Answers the key's direct permissions.
 */
export function addPermissions(deps: KeysDeps) {
  return async (
    req: AddPermissionsRequest,
  ): Promise<MessageInitShape<typeof AddPermissionsResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const keyId = validKeyId(req.keyId);
    const slugs = validSlugs(req.permissions, 1);
    const key = await visibleKey(deps, caller, keyId);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      ...grantChangePermissions({ permissions: adding(slugs) }),
    ]);
    await ensurePermissions(deps, caller, slugs);
    const updated = await deps.store.changeKeyList(
      key.id,
      "permissions",
      { add: slugs, remove: [] },
      deps.clock.now(),
      succeeded(
        deps,
        caller,
        "keys.addPermissions",
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
