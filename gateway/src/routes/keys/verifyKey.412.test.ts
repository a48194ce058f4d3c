import { Code } from "@connectrpc/connect";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.verifyKey answering 412", () => {
  it("answers precondition_failed for the one item of a batch naming an unknown limit, and 200 for the others", async () => {
    const h = harness({
      keys: {
        verifyKeyBatch(req) {
          return {
            results: req.items.map((item) =>
              item.request?.ratelimits.length
                ? {
                    result: {
                      case: "error" as const,
                      value: {
                        code: Code.FailedPrecondition,
                        message: "ratelimit 'nope' was requested but does not exist for key 'key_1'",
                        detail: { reason: ErrorReason.PRECONDITION_FAILED },
                      },
                    },
                  }
                : { result: { case: "response" as const, value: { valid: true, code: VerifyCode.VALID } } },
            ),
          };
        },
      },
    });
    const [bad, good] = await Promise.all([
      h.post("keys.verifyKey", { key: "sk_1", ratelimits: [{ name: "nope" }] }),
      h.post("keys.verifyKey", { key: "sk_2" }),
    ]);
    expect(bad.status).toBe(412);
    expect(bad.body.error).toEqual({
      title: "Precondition Failed",
      detail: "ratelimit 'nope' was requested but does not exist for key 'key_1'",
      status: 412,
      type: `${DOCS}unkey/application/precondition_failed`,
    });
    expect(good.status).toBe(200);
    expect(good.body.data).toEqual({ valid: true, code: "VALID" });
  });
});
