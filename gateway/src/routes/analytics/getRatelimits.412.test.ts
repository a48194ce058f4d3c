import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/analytics.getRatelimits answering 412", () => {
  it("answers precondition_failed to a raw query where no ClickHouse runs", async () => {
    const detail =
      "SQL analytics queries need ClickHouse, which this deployment does not run; use the structured form (start, end, granularity, groupBy).";
    const h = harness({
      analytics: {
        getRatelimits() {
          throw domainError(ErrorReason.PRECONDITION_FAILED, detail);
        },
      },
    });
    const res = await h.post("analytics.getRatelimits", { query: "SELECT count() FROM ratelimits_v1" });
    expect(res.status).toBe(412);
    expect(res.body.error).toEqual({
      title: "Precondition Failed",
      detail,
      status: 412,
      type: `${DOCS}unkey/application/precondition_failed`,
    });
  });
});
