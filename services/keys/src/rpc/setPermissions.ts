import type { SetPermissionsRequest } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "../deps.ts";
import { keyListOperation } from "./key-lists.ts";

/**
 * keys.setPermissions: the key's direct permissions become exactly these slugs
 * in one write (an empty list clears them). Needs update_key,
 * rbac.*.remove_permission_from_key and, unless the list is empty,
 * rbac.*.add_permission_to_key (rbac-changes.ts). A missing slug is created
 * only when the root key holds rbac.*.create_permission, and nothing changes
 * if it does not. Answers the key's direct permissions.
 */
export function setPermissions(deps: KeysDeps) {
  const change = keyListOperation(deps, "permissions", "set");
  return (req: SetPermissionsRequest) => change(req, req.permissions);
}
