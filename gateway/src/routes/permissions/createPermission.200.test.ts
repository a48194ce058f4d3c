import type { CreatePermissionRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.createPermission answering 200", () => {
  let seen: CreatePermissionRequest | undefined;
  const h = harness({
    identity: {
      createPermission(req) {
        seen = req;
        return { permissionId: "perm_1" };
      },
    },
  });

  it("answers the permissionId and forwards name, slug and description", async () => {
    const res = await h.post("permissions.createPermission", {
      name: "Read documents",
      slug: "documents.read",
      description: "Reads any document",
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ permissionId: "perm_1" });
    expect([seen?.name, seen?.slug, seen?.description]).toEqual([
      "Read documents",
      "documents.read",
      "Reads any document",
    ]);
  });

  it("sends no description when none is given", async () => {
    await h.post("permissions.createPermission", { name: "n", slug: "api.*:read-all" });
    expect(seen?.description).toBeUndefined();
  });
});
