import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.deleteApi answering 403", () => {
  it("refuses a root key whose delete_api covers another API, before asking the service", async () => {
    let deleted = 0;
    const h = harness({
      keys: {
        deleteApi() {
          deleted++;
          return {};
        },
      },
    });
    const res = await h.post(
      "apis.deleteApi",
      { apiId: "api_a" },
      { key: h.rootKey("api.api_b.delete_api", "api.*.read_api") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'api.api_a.delete_api'.");
    expect(deleted).toBe(0);
  });
});
