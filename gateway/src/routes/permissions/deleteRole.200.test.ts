import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.deleteRole answering 200", () => {
  it("answers an empty data object", async () => {
    const deleted: string[] = [];
    const h = harness({
      identity: {
        deleteRole(req) {
          deleted.push(req.role);
          return {};
        },
      },
    });
    const res = await h.post("permissions.deleteRole", { role: "admin" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
    expect(deleted).toEqual(["admin"]);
  });
});
