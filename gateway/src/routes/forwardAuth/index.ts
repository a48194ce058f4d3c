import type { Route } from "../../route.ts";
import { createPolicy } from "./createPolicy.ts";
import { deletePolicy } from "./deletePolicy.ts";
import { getPolicy } from "./getPolicy.ts";
import { listPolicies } from "./listPolicies.ts";
import { updatePolicy } from "./updatePolicy.ts";

/** Latchkey's addition: the forward-auth endpoint's policies (docs/edge.md). */
export const forwardAuthRoutes = {
  "forwardAuth.createPolicy": createPolicy,
  "forwardAuth.getPolicy": getPolicy,
  "forwardAuth.listPolicies": listPolicies,
  "forwardAuth.updatePolicy": updatePolicy,
  "forwardAuth.deletePolicy": deletePolicy,
} satisfies Record<`forwardAuth.${string}`, Route>;
