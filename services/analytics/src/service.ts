import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import type { AnalyticsDeps } from "./deps.ts";
import { getRatelimits } from "./rpc/getRatelimits.ts";
import { getVerifications } from "./rpc/getVerifications.ts";
import { QueryRunner } from "./rpc/queries.ts";

/** Every RPC of analytics.v1.AnalyticsService: one missing is a compile error. */
export function service(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService> {
  // One runner: both operations' queries share the per-workspace and total caps.
  const runner = new QueryRunner(deps);
  return {
    getVerifications: getVerifications(deps, runner),
    getRatelimits: getRatelimits(deps, runner),
  };
}
