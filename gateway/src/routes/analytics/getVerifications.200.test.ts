import {
  type GetVerificationsRequest,
  Granularity,
  GroupBy,
} from "@latchkey/proto/analytics/v1/analytics_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const DAY = 86_400_000;
const JAN_1 = 1_767_225_600_000;

describe("POST /v2/analytics.getVerifications answering 200", () => {
  let seen: GetVerificationsRequest | undefined;
  const h = harness({
    analytics: {
      getVerifications(req) {
        seen = req;
        if (req.query !== undefined) return { rows: [{ total: 42, outcome: "VALID" }] };
        const group = req.groupBy === GroupBy.UNSPECIFIED ? undefined : "key_1";
        return {
          buckets: [
            {
              time: BigInt(JAN_1),
              group,
              total: 5n,
              valid: 3n,
              rateLimited: 1n,
              usageExceeded: 1n,
              spentCredits: 4n,
            },
            { time: BigInt(JAN_1 + DAY), group, total: 1n, notFound: 1n },
          ],
        };
      },
    },
  });

  it("answers one bucket per day with total, valid and a count for every outcome code", async () => {
    const res = await h.post("analytics.getVerifications", { start: JAN_1, end: JAN_1 + 2 * DAY });
    expect(res.status).toBe(200);
    const zero = {
      rateLimited: 0,
      usageExceeded: 0,
      disabled: 0,
      expired: 0,
      notFound: 0,
      forbidden: 0,
      insufficientPermissions: 0,
    };
    expect(res.body.data).toEqual([
      { ...zero, time: JAN_1, total: 5, valid: 3, rateLimited: 1, usageExceeded: 1, spentCredits: 4 },
      { ...zero, time: JAN_1 + DAY, total: 1, valid: 0, notFound: 1, spentCredits: 0 },
    ]);
    expect([seen?.start, seen?.end, seen?.granularity, seen?.groupBy, seen?.query]).toEqual([
      BigInt(JAN_1),
      BigInt(JAN_1 + 2 * DAY),
      Granularity.UNSPECIFIED,
      GroupBy.UNSPECIFIED,
      undefined,
    ]);
  });

  it("forwards the filters, granularity and grouping, and names the group after what was grouped by", async () => {
    const res = await h.post("analytics.getVerifications", {
      start: JAN_1,
      end: JAN_1 + DAY,
      apiId: "api_1",
      keyId: "key_1",
      identity: "user_42",
      tags: ["path=/v1/charge", "region=eu"],
      granularity: "hour",
      groupBy: "key",
    });
    expect(res.status).toBe(200);
    expect(res.body.data[0]).toMatchObject({ time: JAN_1, keyId: "key_1", total: 5 });
    expect(seen).toMatchObject({
      apiId: "api_1",
      keyId: "key_1",
      identity: "user_42",
      tags: ["path=/v1/charge", "region=eu"],
      granularity: Granularity.HOUR,
      groupBy: GroupBy.KEY,
    });
  });

  it("answers Unkey's raw form {query} with its rows as data", async () => {
    const query = "SELECT count() AS total, outcome FROM key_verifications_v1 GROUP BY outcome";
    const res = await h.post("analytics.getVerifications", { query });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([{ total: 42, outcome: "VALID" }]);
    expect(seen?.query).toBe(query);
  });
});
