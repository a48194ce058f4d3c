import type { Route } from "../../route.ts";
import { createIdentity } from "./createIdentity.ts";
import { deleteIdentity } from "./deleteIdentity.ts";
import { getIdentity } from "./getIdentity.ts";
import { listIdentities } from "./listIdentities.ts";
import { updateIdentity } from "./updateIdentity.ts";

export const identitiesRoutes = {
  "identities.createIdentity": createIdentity,
  "identities.getIdentity": getIdentity,
  "identities.listIdentities": listIdentities,
  "identities.updateIdentity": updateIdentity,
  "identities.deleteIdentity": deleteIdentity,
} satisfies Record<`identities.${string}`, Route>;
