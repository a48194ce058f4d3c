import type { AddRolesRequest } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "../deps.ts";
import { keyListOperation } from "./key-lists.ts";

/**
 * keys.addRoles: adds existing roles by name (ROLE_NOT_FOUND naming the first
 * that does not exist, and nothing changes); one the key has is a no-op.
 * Answers the key's roles.
 */
export function addRoles(deps: KeysDeps) {
  const change = keyListOperation(deps, "roles", "add");
  return (req: AddRolesRequest) => change(req, req.roles);
}
