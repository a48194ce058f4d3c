import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.getApi answering 403", () => {
  it("refuses a root key whose read_api covers another API", async () => {
    const h = harness({ keys: { getApi: () => ({ api: { id: "api_a", name: "a" } }) } });
    const res = await h.post("apis.getApi", { apiId: "api_a" }, { key: h.rootKey("api.api_b.read_api") });
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'api.api_a.read_api'.");
  });
});
