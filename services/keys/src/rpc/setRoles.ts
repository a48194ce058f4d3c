import type { SetRolesRequest } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "../deps.ts";
import { keyListOperation } from "./key-lists.ts";

/**
 * keys.setRoles: the key's roles become exactly these, in one write (an empty
 * list clears them); a name that names no role is ROLE_NOT_FOUND and nothing
 * changes. Needs update_key, rbac.*.remove_role_from_key and, unless the list
 * is empty, rbac.*.add_role_to_key (rbac-changes.ts). Answers the key's roles.
 */
export function setRoles(deps: KeysDeps) {
  const change = keyListOperation(deps, "roles", "set");
  return (req: SetRolesRequest) => change(req, req.roles);
}
