/**
 * The one rule for every operation that changes a key's roles or direct
 * permissions (addRoles, removeRoles, setRoles, add/remove/setPermissions,
 * createKey, updateKey, rerollKey, migrateKeys): giving a key a role needs
 * rbac.*.add_role_to_key, taking one away rbac.*.remove_role_from_key, and
 * likewise rbac.*.add_permission_to_key / rbac.*.remove_permission_from_key
 * for direct permissions, on top of what the operation itself needs. Asked of
 * one operation and not of another, the cheaper one would be a way around the
 * other (setRoles around addRoles, createKey or rerollKey around both).
 *
 * A change is judged by what it may do, from the request, not from the key's
 * current lists: a set (setRoles, setPermissions, updateKey's lists) may add
 * and may remove, so it needs both (just removal when it names nothing). So an
 * answer never depends on what the key holds (update_key does not let a caller
 * read it) and no concurrent change can slip between a comparison and the write.
 */

/** What an operation may do to one of a key's lists. */
export interface ListChange {
  adds: boolean;
  removes: boolean;
}

/** What an operation may do to a key's roles and direct permissions; an absent list is left alone. */
export interface GrantChange {
  roles?: ListChange | undefined;
  permissions?: ListChange | undefined;
}

/** Appends these names (addRoles, addPermissions, a new key's lists). */
export const adding = (names: readonly string[]): ListChange => ({ adds: names.length > 0, removes: false });

/** Drops these names (removeRoles, removePermissions). */
export const removing = (names: readonly string[]): ListChange => ({
  adds: false,
  removes: names.length > 0,
});

/** The list becomes exactly these names: whatever else it held goes. */
export const replacing = (names: readonly string[]): ListChange => ({
  adds: names.length > 0,
  removes: true,
});

/** The root-key permissions a change needs, in a fixed order. */
export function grantChangePermissions(change: GrantChange): string[] {
  const needed: string[] = [];
  if (change.roles?.adds) needed.push("rbac.*.add_role_to_key");
  if (change.roles?.removes) needed.push("rbac.*.remove_role_from_key");
  if (change.permissions?.adds) needed.push("rbac.*.add_permission_to_key");
  if (change.permissions?.removes) needed.push("rbac.*.remove_permission_from_key");
  return needed;
}
