import type { Route } from "../../route.ts";
import { getRatelimits } from "./getRatelimits.ts";
import { getVerifications } from "./getVerifications.ts";

export const analyticsRoutes = {
  "analytics.getVerifications": getVerifications,
  "analytics.getRatelimits": getRatelimits,
} satisfies Record<`analytics.${string}`, Route>;
