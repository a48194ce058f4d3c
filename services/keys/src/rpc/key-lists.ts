import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { need, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { ensurePermissions, permissionsView, requireRoles, rolesView } from "../rbac.ts";
import { adding, grantChangePermissions, type ListChange, removing, replacing } from "../rbac-changes.ts";
import { keyChangeCommitted } from "./key-changed.ts";
import { validKeyId, validRoleNames, validSlugs } from "./validation.ts";

/** A key's list that keys.add/remove/set{Permissions,Roles} change. */
type KeyList = "permissions" | "roles";
/** What the operation does to it: appends names, drops them, or makes the list exactly them. */
type Change = "add" | "remove" | "set";

/** How each list's names are checked, resolved for the write and shown in the answer. */
const LISTS = {
  permissions: {
    valid: validSlugs,
    /** A missing slug is created when the root key holds rbac.*.create_permission (rbac.ts); removing creates none. */
    async resolve(deps: KeysDeps, caller: Caller, slugs: string[], change: Change): Promise<string[]> {
      if (change !== "remove") await ensurePermissions(deps, caller, slugs);
      return slugs;
    },
    view: permissionsView,
  },
  roles: {
    valid: validRoleNames,
    /** Every name must name a role (ROLE_NOT_FOUND, and nothing changes); a role given is written by its own name. */
    async resolve(deps: KeysDeps, caller: Caller, names: string[], change: Change): Promise<string[]> {
      const roles = await requireRoles(deps, caller, names);
      return change === "remove" ? names : roles.map((r) => r.name);
    },
    view: rolesView,
  },
} as const;

type View<L extends KeyList> = Awaited<ReturnType<(typeof LISTS)[L]["view"]>>;

const CHANGES: Record<Change, (names: readonly string[]) => ListChange> = {
  add: adding,
  remove: removing,
  set: replacing,
};

/**
 * keys.{add,remove,set}{Permissions,Roles}, one operation each: the key's list changed by the names given, in one
 * write, then announced as key.updated and dropped from the caches. Needs update_key and the grant permissions of
 * the change (rbac-changes.ts); add and remove name at least one, set may name none (the list is cleared). Answers
 * the key's list as it now is.
 */
export function keyListOperation<L extends KeyList>(deps: KeysDeps, list: L, change: Change) {
  const operation = `keys.${change}${list === "permissions" ? "Permissions" : "Roles"}`;
  const { valid, resolve, view } = LISTS[list];
  return async (
    req: { keyId: string; caller?: Caller },
    given: readonly string[],
  ): Promise<Record<L, View<L>>> => {
    const caller = authenticatedCaller(req);
    const keyId = validKeyId(req.keyId);
    const names = valid(given, change === "set" ? 0 : 1);
    const key = await visibleKey(deps, caller, keyId);
    const listChange = CHANGES[change](names);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      ...grantChangePermissions(list === "permissions" ? { permissions: listChange } : { roles: listChange }),
    ]);
    const values = await resolve(deps, caller, names, change);
    const at = deps.clock.now();
    const audit = succeeded(deps, caller, operation, [keyResource(key.id), apiResource(key.apiId)], [list]);
    const updated =
      change === "set"
        ? await deps.store.updateKey(
            key.id,
            list === "permissions"
              ? { permissions: values, updatedAt: at }
              : { roles: values, updatedAt: at },
            audit,
          )
        : await deps.store.changeKeyList(
            key.id,
            list,
            change === "add" ? { add: values, remove: [] } : { add: [], remove: values },
            at,
            audit,
          );
    if (!updated) throw keyNotFound();
    await keyChangeCommitted(deps, caller, key, "key.updated", { fields: [list] });
    return { [list]: await view(deps, caller, updated[list]) } as Record<L, View<L>>;
  };
}
