import type { Route } from "../route.ts";
import { getVerifications } from "./analytics.getVerifications.ts";
import { createApi } from "./apis.createApi.ts";
import { deleteApi } from "./apis.deleteApi.ts";
import { getApi } from "./apis.getApi.ts";
import { listKeys } from "./apis.listKeys.ts";
import { createIdentity } from "./identities.createIdentity.ts";
import { deleteIdentity } from "./identities.deleteIdentity.ts";
import { getIdentity } from "./identities.getIdentity.ts";
import { listIdentities } from "./identities.listIdentities.ts";
import { updateIdentity } from "./identities.updateIdentity.ts";
import { addPermissions } from "./keys.addPermissions.ts";
import { addRoles } from "./keys.addRoles.ts";
import { createKey } from "./keys.createKey.ts";
import { deleteKey } from "./keys.deleteKey.ts";
import { getKey } from "./keys.getKey.ts";
import { migrateKeys } from "./keys.migrateKeys.ts";
import { removePermissions } from "./keys.removePermissions.ts";
import { removeRoles } from "./keys.removeRoles.ts";
import { rerollKey } from "./keys.rerollKey.ts";
import { setPermissions } from "./keys.setPermissions.ts";
import { setRoles } from "./keys.setRoles.ts";
import { updateCredits } from "./keys.updateCredits.ts";
import { updateKey } from "./keys.updateKey.ts";
import { verifyKey } from "./keys.verifyKey.ts";
import { whoami } from "./keys.whoami.ts";
import { createPermission } from "./permissions.createPermission.ts";
import { createRole } from "./permissions.createRole.ts";
import { deletePermission } from "./permissions.deletePermission.ts";
import { deleteRole } from "./permissions.deleteRole.ts";
import { getPermission } from "./permissions.getPermission.ts";
import { getRole } from "./permissions.getRole.ts";
import { listPermissions } from "./permissions.listPermissions.ts";
import { listRoles } from "./permissions.listRoles.ts";
import { setRolePermissions } from "./permissions.setRolePermissions.ts";
import { deleteOverride } from "./ratelimits.deleteOverride.ts";
import { getOverride } from "./ratelimits.getOverride.ts";
import { limit } from "./ratelimits.limit.ts";
import { listOverrides, listOverridesUnkey } from "./ratelimits.listOverrides.ts";
import { multiLimit } from "./ratelimits.multiLimit.ts";
import { setOverride } from "./ratelimits.setOverride.ts";

/**
 * Every public operation, served at POST /v2/<operation>. Rate-limit
 * operations answer both at the contract's `ratelimits.` and at Unkey's
 * `ratelimit.`, so Unkey's clients work unchanged.
 */
export const OPERATIONS = [
  "apis.createApi",
  "apis.getApi",
  "keys.createKey",
  "keys.getKey",
  "keys.verifyKey",
  "apis.listKeys",
  "apis.deleteApi",
  "keys.updateKey",
  "keys.updateCredits",
  "keys.deleteKey",
  "keys.whoami",
  "keys.rerollKey",
  "keys.migrateKeys",
  "keys.addPermissions",
  "keys.removePermissions",
  "keys.setPermissions",
  "keys.addRoles",
  "keys.removeRoles",
  "keys.setRoles",
  "ratelimits.limit",
  "ratelimits.multiLimit",
  "ratelimits.setOverride",
  "ratelimits.getOverride",
  "ratelimits.listOverrides",
  "ratelimits.deleteOverride",
  "ratelimit.limit",
  "ratelimit.multiLimit",
  "ratelimit.setOverride",
  "ratelimit.getOverride",
  "ratelimit.listOverrides",
  "ratelimit.deleteOverride",
  "identities.createIdentity",
  "identities.getIdentity",
  "identities.listIdentities",
  "identities.updateIdentity",
  "identities.deleteIdentity",
  "permissions.createPermission",
  "permissions.getPermission",
  "permissions.deletePermission",
  "permissions.listPermissions",
  "permissions.createRole",
  "permissions.getRole",
  "permissions.deleteRole",
  "permissions.listRoles",
  "permissions.setRolePermissions",
  "analytics.getVerifications",
] as const;

export type Operation = (typeof OPERATIONS)[number];

/** The route table: an operation without a route, or a route without an operation, fails to compile. */
export const routes = {
  "apis.createApi": createApi,
  "apis.getApi": getApi,
  "keys.createKey": createKey,
  "keys.getKey": getKey,
  "keys.verifyKey": verifyKey,
  "apis.listKeys": listKeys,
  "apis.deleteApi": deleteApi,
  "keys.updateKey": updateKey,
  "keys.updateCredits": updateCredits,
  "keys.deleteKey": deleteKey,
  "keys.whoami": whoami,
  "keys.rerollKey": rerollKey,
  "keys.migrateKeys": migrateKeys,
  "keys.addPermissions": addPermissions,
  "keys.removePermissions": removePermissions,
  "keys.setPermissions": setPermissions,
  "keys.addRoles": addRoles,
  "keys.removeRoles": removeRoles,
  "keys.setRoles": setRoles,
  "ratelimits.limit": limit,
  "ratelimits.multiLimit": multiLimit,
  "ratelimits.setOverride": setOverride,
  "ratelimits.getOverride": getOverride,
  "ratelimits.listOverrides": listOverrides,
  "ratelimits.deleteOverride": deleteOverride,
  "ratelimit.limit": limit,
  "ratelimit.multiLimit": multiLimit,
  "ratelimit.setOverride": setOverride,
  "ratelimit.getOverride": getOverride,
  "ratelimit.listOverrides": listOverridesUnkey,
  "ratelimit.deleteOverride": deleteOverride,
  "identities.createIdentity": createIdentity,
  "identities.getIdentity": getIdentity,
  "identities.listIdentities": listIdentities,
  "identities.updateIdentity": updateIdentity,
  "identities.deleteIdentity": deleteIdentity,
  "permissions.createPermission": createPermission,
  "permissions.getPermission": getPermission,
  "permissions.deletePermission": deletePermission,
  "permissions.listPermissions": listPermissions,
  "permissions.createRole": createRole,
  "permissions.getRole": getRole,
  "permissions.deleteRole": deleteRole,
  "permissions.listRoles": listRoles,
  "permissions.setRolePermissions": setRolePermissions,
  "analytics.getVerifications": getVerifications,
} satisfies Record<Operation, Route>;
