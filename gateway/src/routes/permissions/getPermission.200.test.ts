import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.getPermission answering 200", () => {
  it("answers id, name, slug and description, found by id or slug", async () => {
    const asked: string[] = [];
    const h = harness({
      identity: {
        getPermission(req) {
          asked.push(req.permission);
          return {
            permission: {
              id: "perm_1",
              name: "Read documents",
              slug: "documents.read",
              description: "Reads any document",
              createdAt: 1n,
            },
          };
        },
      },
    });
    const res = await h.post("permissions.getPermission", { permission: "documents.read" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: "perm_1",
      name: "Read documents",
      slug: "documents.read",
      description: "Reads any document",
    });
    expect(asked).toEqual(["documents.read"]);
  });

  it("omits a description the permission does not have", async () => {
    const h = harness({
      identity: { getPermission: () => ({ permission: { id: "perm_1", name: "n", slug: "s" } }) },
    });
    const res = await h.post("permissions.getPermission", { permission: "perm_1" });
    expect(res.body.data).toEqual({ id: "perm_1", name: "n", slug: "s" });
  });
});
