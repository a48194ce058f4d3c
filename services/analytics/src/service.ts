import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import type { AnalyticsDeps } from "./deps.ts";
import { getVerifications } from "./rpc/getVerifications.ts";

/** Every RPC of analytics.v1.AnalyticsService: one missing is a compile error. */
export function service(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService> {
  return {
    getVerifications: getVerifications(deps),
  };
}
