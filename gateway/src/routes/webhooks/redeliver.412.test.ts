import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/webhooks.redeliver answering 412", () => {
  it("answers application/precondition_failed when the workspace has as many deliveries waiting as it may", async () => {
    const detail =
      "The workspace already has 10000 deliveries waiting, the most it may have; redeliver once some are sent.";
    const h = harness({
      webhooks: {
        redeliver() {
          throw domainError(ErrorReason.PRECONDITION_FAILED, detail);
        },
      },
    });
    const res = await h.post("webhooks.redeliver", { webhookId: "wh_1", deliveryId: "dlv_1" });
    expect(res.status).toBe(412);
    expect(res.body.error).toEqual({
      title: "Precondition Failed",
      detail,
      status: 412,
      type: `${DOCS}unkey/application/precondition_failed`,
    });
  });
});
