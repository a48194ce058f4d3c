import type { RemovePermissionsRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../testing.ts";

describe("POST /v2/keys.removePermissions answering 200", () => {
  it("answers the key's direct permissions as the array data, description only when set", async () => {
    const seen: RemovePermissionsRequest[] = [];
    const h = harness({
      keys: {
        removePermissions(req) {
          seen.push(req);
          return {
            permissions: [
              { id: "perm_1", name: "documents.read", slug: "documents.read", description: "Read documents" },
              { id: "perm_2", name: "documents.write", slug: "documents.write" },
            ],
          };
        },
      },
    });
    const res = await h.post("keys.removePermissions", {
      keyId: "key_1",
      permissions: ["documents.read", "documents.*"],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { id: "perm_1", name: "documents.read", slug: "documents.read", description: "Read documents" },
      { id: "perm_2", name: "documents.write", slug: "documents.write" },
    ]);
    expect(seen.map((r) => [r.keyId, r.permissions])).toEqual([["key_1", ["documents.read", "documents.*"]]]);
  });

  it("answers data [] when the key has no direct permissions left", async () => {
    const h = harness({ keys: { removePermissions: () => ({ permissions: [] }) } });
    const res = await h.post("keys.removePermissions", { keyId: "key_1", permissions: ["documents.read"] });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });
});
