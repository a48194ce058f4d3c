import type { CreateApiRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness, WORKSPACE } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.createApi answering 200", () => {
  it("creates the API for the root key's workspace and answers its apiId", async () => {
    let seen: CreateApiRequest | undefined;
    const h = harness({
      keys: {
        createApi(req) {
          seen = req;
          return { apiId: "api_7Hq2" };
        },
      },
    });
    const res = await h.post("apis.createApi", { name: "payments" }, { key: h.rootKey("api.*.create_api") });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    expect(res.body).toEqual({
      meta: { requestId: expect.stringMatching(/^req_/) },
      data: { apiId: "api_7Hq2" },
    });
    expect(seen?.name).toBe("payments");
    expect(seen?.caller?.workspaceId).toBe(WORKSPACE);
    expect(seen?.caller?.permissions).toEqual(["api.*.create_api"]);
  });

  it("accepts Latchkey's apis.*.create_api spelling", async () => {
    const h = harness({ keys: { createApi: () => ({ apiId: "api_1" }) } });
    const res = await h.post("apis.createApi", { name: "payments" }, { key: h.rootKey("apis.*.create_api") });
    expect(res.status).toBe(200);
  });
});
