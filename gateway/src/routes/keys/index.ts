import type { Route } from "../../route.ts";
import { addPermissions } from "./addPermissions.ts";
import { addRoles } from "./addRoles.ts";
import { createKey } from "./createKey.ts";
import { deleteKey } from "./deleteKey.ts";
import { getKey } from "./getKey.ts";
import { migrateKeys } from "./migrateKeys.ts";
import { removePermissions } from "./removePermissions.ts";
import { removeRoles } from "./removeRoles.ts";
import { rerollKey } from "./rerollKey.ts";
import { setPermissions } from "./setPermissions.ts";
import { setRoles } from "./setRoles.ts";
import { updateCredits } from "./updateCredits.ts";
import { updateKey } from "./updateKey.ts";
import { verifyKey } from "./verifyKey.ts";
import { whoami } from "./whoami.ts";

export const keysRoutes = {
  "keys.createKey": createKey,
  "keys.getKey": getKey,
  "keys.verifyKey": verifyKey,
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
} satisfies Record<`keys.${string}`, Route>;
