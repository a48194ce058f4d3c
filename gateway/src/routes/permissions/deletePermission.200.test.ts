import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.deletePermission answering 200", () => {
  it("answers an empty data object", async () => {
    const deleted: string[] = [];
    const h = harness({
      identity: {
        deletePermission(req) {
          deleted.push(req.permission);
          return {};
        },
      },
    });
    const res = await h.post("permissions.deletePermission", { permission: "perm_1" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
    expect(deleted).toEqual(["perm_1"]);
  });
});
