import type { Route } from "../../route.ts";
import { getVerifications } from "./getVerifications.ts";

export const analyticsRoutes = {
  "analytics.getVerifications": getVerifications,
} satisfies Record<`analytics.${string}`, Route>;
