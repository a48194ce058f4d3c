import type { RemovePermissionsRequest } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "../deps.ts";
import { keyListOperation } from "./key-lists.ts";

/**
 * keys.removePermissions: removes direct permissions by slug; one the key does
 * not hold is a no-op, and permissions reached through roles are untouched.
 * Answers the key's direct permissions.
 */
export function removePermissions(deps: KeysDeps) {
  const change = keyListOperation(deps, "permissions", "remove");
  return (req: RemovePermissionsRequest) => change(req, req.permissions);
}
