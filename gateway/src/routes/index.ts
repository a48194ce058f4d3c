import type { Route } from "../route.ts";
import { analyticsRoutes } from "./analytics/index.ts";
import { apisRoutes } from "./apis/index.ts";
import { auditRoutes } from "./audit/index.ts";
import { forwardAuthRoutes } from "./forwardAuth/index.ts";
import { identitiesRoutes } from "./identities/index.ts";
import { keysRoutes } from "./keys/index.ts";
import { leaksRoutes } from "./leaks/index.ts";
import { permissionsRoutes } from "./permissions/index.ts";
import { portalRoutes } from "./portal/index.ts";
import { portalsRoutes } from "./portals/index.ts";
import { ratelimitRoutes } from "./ratelimit/index.ts";
import { webhooksRoutes } from "./webhooks/index.ts";

/**
 * The route table: every public operation, served at POST /v2/<operation>, one folder per
 * context. It is the one list of operations: OPERATIONS, the tests and docs/openapi.json are
 * derived from it.
 */
export const routes = {
  ...apisRoutes,
  ...keysRoutes,
  ...leaksRoutes,
  ...ratelimitRoutes,
  ...identitiesRoutes,
  ...permissionsRoutes,
  ...analyticsRoutes,
  ...webhooksRoutes,
  ...auditRoutes,
  ...portalsRoutes,
  ...portalRoutes,
  ...forwardAuthRoutes,
} satisfies Record<string, Route>;

export type Operation = keyof typeof routes;

/**
 * The API's operations: those docs/openapi.json documents and the tests run through the contract's
 * checks. The gateway serves these and the few left out of the document (`openapi: false`).
 */
export const OPERATIONS = (Object.keys(routes) as Operation[]).filter(
  (o) => (routes[o] as Route).openapi !== false,
);

/** The operation an alias answers like: Unkey's `ratelimit.<op>` is `ratelimits.<op>` (ratelimit/index.ts). */
export function aliasOf(operation: Operation): Operation | undefined {
  return operation.startsWith("ratelimit.")
    ? (`ratelimits.${operation.slice("ratelimit.".length)}` as Operation)
    : undefined;
}
