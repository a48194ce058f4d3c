import type { DeleteApiRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness, WORKSPACE } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.deleteApi answering 200", () => {
  it("deletes the API through the service and answers data {}", async () => {
    const seen: DeleteApiRequest[] = [];
    const h = harness({
      keys: {
        deleteApi(req) {
          seen.push(req);
          return {};
        },
      },
    });
    const res = await h.post(
      "apis.deleteApi",
      { apiId: "api_7Hq2" },
      { key: h.rootKey("api.api_7Hq2.delete_api") },
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ meta: { requestId: expect.stringMatching(/^req_/) }, data: {} });
    expect(seen.map((r) => [r.apiId, r.caller?.workspaceId, r.caller?.permissions])).toEqual([
      ["api_7Hq2", WORKSPACE, ["api.api_7Hq2.delete_api"]],
    ]);
  });
});
