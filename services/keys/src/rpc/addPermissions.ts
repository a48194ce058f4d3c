import type { AddPermissionsRequest } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "../deps.ts";
import { keyListOperation } from "./key-lists.ts";

/**
 * keys.addPermissions: adds direct permissions by slug; one the key holds
 * already is a no-op. A missing slug is created only when the root key holds
 * rbac.*.create_permission. Answers the key's direct permissions.
 */
export function addPermissions(deps: KeysDeps) {
  const change = keyListOperation(deps, "permissions", "add");
  return (req: AddPermissionsRequest) => change(req, req.permissions);
}
