import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.createApi answering 403", () => {
  it("refuses a root key without api.*.create_api and creates nothing", async () => {
    let created = 0;
    const h = harness({
      keys: {
        createApi() {
          created++;
          return { apiId: "api_1" };
        },
      },
    });
    const res = await h.post("apis.createApi", { name: "payments" }, { key: h.rootKey("api.*.read_api") });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({
      title: "Insufficient Permissions",
      detail: "The root key lacks the permission 'api.*.create_api'.",
      status: 403,
      type: `${DOCS}unkey/authorization/insufficient_permissions`,
    });
    expect(created).toBe(0);
  });

  it("refuses a root key whose create_api is scoped to one API id", async () => {
    const h = harness({ keys: { createApi: () => ({ apiId: "api_1" }) } });
    const res = await h.post(
      "apis.createApi",
      { name: "payments" },
      { key: h.rootKey("api.api_1.create_api") },
    );
    expect(res.status).toBe(403);
  });
});
