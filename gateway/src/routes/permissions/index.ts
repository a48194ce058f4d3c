import type { Route } from "../../route.ts";
import { createPermission } from "./createPermission.ts";
import { createRole } from "./createRole.ts";
import { deletePermission } from "./deletePermission.ts";
import { deleteRole } from "./deleteRole.ts";
import { getPermission } from "./getPermission.ts";
import { getRole } from "./getRole.ts";
import { listPermissions } from "./listPermissions.ts";
import { listRoles } from "./listRoles.ts";
import { setRolePermissions } from "./setRolePermissions.ts";

export const permissionsRoutes = {
  "permissions.createPermission": createPermission,
  "permissions.getPermission": getPermission,
  "permissions.deletePermission": deletePermission,
  "permissions.listPermissions": listPermissions,
  "permissions.createRole": createRole,
  "permissions.getRole": getRole,
  "permissions.deleteRole": deleteRole,
  "permissions.listRoles": listRoles,
  "permissions.setRolePermissions": setRolePermissions,
} satisfies Record<`permissions.${string}`, Route>;
