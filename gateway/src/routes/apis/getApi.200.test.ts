import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.getApi answering 200", () => {
  const h = harness({
    keys: {
      getApi: (req) => ({ api: { id: req.apiId, name: "payments", createdAt: 1_767_225_600_000n } }),
    },
  });

  it("answers the API's id and name, and Latchkey's key format and leak policy (their defaults when unset)", async () => {
    const res = await h.post("apis.getApi", { apiId: "api_7Hq2" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: "api_7Hq2",
      name: "payments",
      keyFormat: "plain",
      leakPolicy: "revoke",
      expiringNoticeDays: 0,
    });
  });

  it("lets a root key scoped to that API read it", async () => {
    const res = await h.post(
      "apis.getApi",
      { apiId: "api_7Hq2" },
      { key: h.rootKey("api.api_7Hq2.read_api") },
    );
    expect(res.status).toBe(200);
  });
});
