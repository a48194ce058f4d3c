import type { CreateRoleRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.createRole answering 200", () => {
  let seen: CreateRoleRequest | undefined;
  const h = harness({
    identity: {
      createRole(req) {
        seen = req;
        return { roleId: "role_1" };
      },
    },
  });

  it("answers the roleId and forwards name, description and permission slugs", async () => {
    const res = await h.post("permissions.createRole", {
      name: "support.readonly",
      description: "Reads tickets",
      permissions: ["tickets.read", "users.read"],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ roleId: "role_1" });
    expect([seen?.name, seen?.description, seen?.permissions]).toEqual([
      "support.readonly",
      "Reads tickets",
      ["tickets.read", "users.read"],
    ]);
  });

  it("sends no permissions when none are given", async () => {
    await h.post("permissions.createRole", { name: "admin" });
    expect(seen?.permissions).toEqual([]);
    expect(seen?.description).toBeUndefined();
  });
});
