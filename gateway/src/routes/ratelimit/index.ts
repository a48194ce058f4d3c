import type { Route } from "../../route.ts";
import { deleteOverride } from "./deleteOverride.ts";
import { getOverride } from "./getOverride.ts";
import { limit } from "./limit.ts";
import { listNamespaces } from "./listNamespaces.ts";
import { listOverrides, listOverridesUnkey } from "./listOverrides.ts";
import { multiLimit } from "./multiLimit.ts";
import { setOverride } from "./setOverride.ts";

/**
 * The rate-limit operations answer both at Latchkey's `ratelimits.` and at Unkey's
 * `ratelimit.`, so Unkey's clients work unchanged; the second spelling is the alias. Only
 * listOverrides answers differently there: Unkey's list with `pagination`.
 */
export const ratelimitRoutes = {
  "ratelimits.limit": limit,
  "ratelimits.multiLimit": multiLimit,
  "ratelimits.setOverride": setOverride,
  "ratelimits.getOverride": getOverride,
  "ratelimits.listOverrides": listOverrides,
  "ratelimits.deleteOverride": deleteOverride,
  "ratelimits.listNamespaces": listNamespaces,
  "ratelimit.limit": limit,
  "ratelimit.multiLimit": multiLimit,
  "ratelimit.setOverride": setOverride,
  "ratelimit.getOverride": getOverride,
  "ratelimit.listOverrides": listOverridesUnkey,
  "ratelimit.deleteOverride": deleteOverride,
} satisfies Record<`ratelimits.${string}` | `ratelimit.${string}`, Route>;
