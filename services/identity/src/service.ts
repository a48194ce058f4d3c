import type { ServiceImpl } from "@connectrpc/connect";
import type { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { audited, resourcesOf } from "@latchkey/runtime";
import type { IdentityDeps } from "./deps.ts";
import { createIdentity } from "./rpc/createIdentity.ts";
import { createPermission } from "./rpc/createPermission.ts";
import { createRole } from "./rpc/createRole.ts";
import { deleteIdentity } from "./rpc/deleteIdentity.ts";
import { deletePermission } from "./rpc/deletePermission.ts";
import { deleteRole } from "./rpc/deleteRole.ts";
import { ensureIdentity } from "./rpc/ensureIdentity.ts";
import { getIdentities } from "./rpc/getIdentities.ts";
import { getIdentity } from "./rpc/getIdentity.ts";
import { getPermission } from "./rpc/getPermission.ts";
import { getRole } from "./rpc/getRole.ts";
import { listIdentities } from "./rpc/listIdentities.ts";
import { listPermissions } from "./rpc/listPermissions.ts";
import { listRoles } from "./rpc/listRoles.ts";
import { resolvePermissions } from "./rpc/resolvePermissions.ts";
import { resolveRoles } from "./rpc/resolveRoles.ts";
import { setRolePermissions } from "./rpc/setRolePermissions.ts";
import { updateIdentity } from "./rpc/updateIdentity.ts";

/**
 * Every RPC of IdentityService; a missing one fails to compile. Each management operation is
 * `audited` under its public name: a refusal leaves its failure record, naming what the request
 * gave (the success record is written by the store with the change, audit.ts).
 */
export function service(deps: IdentityDeps): ServiceImpl<typeof IdentityService> {
  return {
    createIdentity: audited(deps, "identities.createIdentity", () => [], createIdentity(deps)),
    getIdentity: getIdentity(deps),
    listIdentities: listIdentities(deps),
    updateIdentity: audited(
      deps,
      "identities.updateIdentity",
      (req) => resourcesOf(["identity", req.identity]),
      updateIdentity(deps),
    ),
    deleteIdentity: audited(
      deps,
      "identities.deleteIdentity",
      (req) => resourcesOf(["identity", req.identity]),
      deleteIdentity(deps),
    ),
    createPermission: audited(deps, "permissions.createPermission", () => [], createPermission(deps)),
    getPermission: getPermission(deps),
    deletePermission: audited(
      deps,
      "permissions.deletePermission",
      (req) => resourcesOf(["permission", req.permission]),
      deletePermission(deps),
    ),
    listPermissions: listPermissions(deps),
    createRole: audited(deps, "permissions.createRole", () => [], createRole(deps)),
    getRole: getRole(deps),
    deleteRole: audited(
      deps,
      "permissions.deleteRole",
      (req) => resourcesOf(["role", req.role]),
      deleteRole(deps),
    ),
    listRoles: listRoles(deps),
    setRolePermissions: audited(
      deps,
      "permissions.setRolePermissions",
      (req) => resourcesOf(["role", req.role]),
      setRolePermissions(deps),
    ),
    ensureIdentity: ensureIdentity(deps),
    getIdentities: getIdentities(deps),
    resolveRoles: resolveRoles(deps),
    resolvePermissions: resolvePermissions(deps),
  };
}
