import { domainError, ErrorReason } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";

/**
 * Resolves role names for a key. Roles cannot be created yet (issue 5 brings
 * them, and replaces this function), so every named role is unknown.
 */
export async function resolveRoles(
  _deps: KeysDeps,
  _workspaceId: string,
  roles: readonly string[],
): Promise<string[]> {
  const [first] = roles;
  if (first !== undefined) throw domainError(ErrorReason.ROLE_NOT_FOUND, `Role '${first}' was not found.`);
  return [];
}
