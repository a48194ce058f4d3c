import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { domainError, ErrorReason, holds, need, requirePermissions } from "@latchkey/runtime";
import type { IdentityDeps } from "./deps.ts";
import type { IdentityRecord, PermissionRecord, RoleRecord } from "./store/identity-store.ts";

/**
 * Who may see what. Nothing crosses workspaces: the store looks only in the
 * caller's, so another workspace's resource and a missing one get the same
 * NOT_FOUND, from the helpers below and nowhere else.
 */

export { authenticatedCaller } from "@latchkey/runtime";

export const identityNotFound = (ref: string) =>
  domainError(ErrorReason.IDENTITY_NOT_FOUND, `The identity '${ref}' was not found.`);
export const permissionNotFound = (ref: string) =>
  domainError(ErrorReason.PERMISSION_NOT_FOUND, `The permission '${ref}' was not found.`);
export const roleNotFound = (ref: string) =>
  domainError(ErrorReason.ROLE_NOT_FOUND, `The role '${ref}' was not found.`);

/** The caller's identity by id or externalId, or IDENTITY_NOT_FOUND. */
export async function visibleIdentity(
  deps: IdentityDeps,
  caller: Caller,
  ref: string,
): Promise<IdentityRecord> {
  const identity = await deps.store.findIdentity(caller.workspaceId, ref);
  if (!identity) throw identityNotFound(ref);
  return identity;
}

/** The caller's permission by id or slug, or PERMISSION_NOT_FOUND. */
export async function visiblePermission(
  deps: IdentityDeps,
  caller: Caller,
  ref: string,
): Promise<PermissionRecord> {
  const permission = await deps.store.findPermission(caller.workspaceId, ref);
  if (!permission) throw permissionNotFound(ref);
  return permission;
}

/** The caller's role by id or name, or ROLE_NOT_FOUND. */
export async function visibleRole(deps: IdentityDeps, caller: Caller, ref: string): Promise<RoleRecord> {
  const role = await deps.store.findRole(caller.workspaceId, ref);
  if (!role) throw roleNotFound(ref);
  return role;
}

/**
 * An identity the caller may read: identity.*.read_identity reads any, and
 * identity.<id>.read_identity that one. Without either, the answer is the
 * same INSUFFICIENT_PERMISSIONS whether or not the identity exists.
 */
export async function readableIdentity(
  deps: IdentityDeps,
  caller: Caller,
  ref: string,
): Promise<IdentityRecord> {
  const any = need("identity", "*", "read_identity");
  if (holds(caller.permissions, any)) return visibleIdentity(deps, caller, ref);
  const identity = await deps.store.findIdentity(caller.workspaceId, ref);
  if (identity && holds(caller.permissions, need("identity", identity.id, "read_identity"))) return identity;
  requirePermissions(caller, [any]);
  throw new Error("unreachable: requirePermissions refused the caller");
}
