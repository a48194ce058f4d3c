import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.getRole answering 200", () => {
  it("answers the role with its permissions, found by id or name", async () => {
    const asked: string[] = [];
    const h = harness({
      identity: {
        getRole(req) {
          asked.push(req.role);
          return {
            role: {
              id: "role_1",
              name: "support.readonly",
              description: "Reads tickets",
              permissions: [{ id: "perm_1", name: "Read tickets", slug: "tickets.read" }],
              createdAt: 1n,
            },
          };
        },
      },
    });
    const res = await h.post("permissions.getRole", { role: "support.readonly" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: "role_1",
      name: "support.readonly",
      description: "Reads tickets",
      permissions: [{ id: "perm_1", name: "Read tickets", slug: "tickets.read" }],
    });
    expect(asked).toEqual(["support.readonly"]);
  });

  it("omits description and permissions the role does not have", async () => {
    const h = harness({ identity: { getRole: () => ({ role: { id: "role_1", name: "admin" } }) } });
    const res = await h.post("permissions.getRole", { role: "role_1" });
    expect(res.body.data).toEqual({ id: "role_1", name: "admin" });
  });
});
