import {
  type GetRatelimitsRequest,
  Granularity,
  RatelimitGroupBy,
} from "@latchkey/proto/analytics/v1/analytics_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const HOUR = 3_600_000;
const JAN_1 = 1_767_225_600_000;

describe("POST /v2/analytics.getRatelimits answering 200", () => {
  let seen: GetRatelimitsRequest | undefined;
  const h = harness({
    analytics: {
      getRatelimits(req) {
        seen = req;
        if (req.query !== undefined) return { rows: [{ namespace_id: "rlns_1", total: 42 }] };
        const grouped = req.groupBy !== RatelimitGroupBy.UNSPECIFIED;
        const byIdentifier = req.groupBy === RatelimitGroupBy.IDENTIFIER;
        return {
          buckets: [
            {
              time: BigInt(JAN_1),
              ...(grouped ? { namespaceId: "rlns_1" } : {}),
              ...(byIdentifier ? { identifier: "user_1" } : {}),
              total: 5n,
              passed: 3n,
              refused: 2n,
            },
          ],
        };
      },
    },
  });

  it("answers Unkey's SQL form with the query's rows, as they are", async () => {
    const res = await h.post("analytics.getRatelimits", {
      query: "SELECT namespace_id, COUNT(*) AS total FROM ratelimits_v1 GROUP BY namespace_id",
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([{ namespace_id: "rlns_1", total: 42 }]);
    expect(seen?.query).toBe(
      "SELECT namespace_id, COUNT(*) AS total FROM ratelimits_v1 GROUP BY namespace_id",
    );
    expect(seen?.start).toBe(0n);
  });

  it("answers the structured form with total, passed and refused per bucket, the group's fields only when grouped", async () => {
    const plain = await h.post("analytics.getRatelimits", { start: JAN_1, end: JAN_1 + HOUR });
    expect(plain.body.data).toEqual([{ time: JAN_1, total: 5, passed: 3, refused: 2 }]);
    const grouped = await h.post("analytics.getRatelimits", {
      start: JAN_1,
      end: JAN_1 + HOUR,
      granularity: "hour",
      groupBy: "identifier",
      namespaceId: "rlns_1",
      identifier: "user_1",
    });
    expect(grouped.status).toBe(200);
    expect(grouped.body.data).toEqual([
      { time: JAN_1, namespaceId: "rlns_1", identifier: "user_1", total: 5, passed: 3, refused: 2 },
    ]);
    expect(seen).toMatchObject({
      start: BigInt(JAN_1),
      end: BigInt(JAN_1 + HOUR),
      granularity: Granularity.HOUR,
      groupBy: RatelimitGroupBy.IDENTIFIER,
      namespaceId: "rlns_1",
      identifier: "user_1",
    });
  });
});
