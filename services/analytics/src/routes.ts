import type { ConnectRouter } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import type { AnalyticsDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: serveRpc in production, createRouterTransport in tests, the all-in-one process alike. */
export function analyticsRoutes(deps: AnalyticsDeps) {
  return (router: ConnectRouter) => router.service(AnalyticsService, service(deps));
}
