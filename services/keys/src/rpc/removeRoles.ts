import type { RemoveRolesRequest } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "../deps.ts";
import { keyListOperation } from "./key-lists.ts";

/**
 * keys.removeRoles: removes roles by name; a role the key does not have is a
 * no-op, a name that names no role is ROLE_NOT_FOUND. Needs update_key and
 * rbac.*.remove_role_from_key (rbac-changes.ts). Answers the key's remaining roles.
 */
export function removeRoles(deps: KeysDeps) {
  const change = keyListOperation(deps, "roles", "remove");
  return (req: RemoveRolesRequest) => change(req, req.roles);
}
