import type { SetRolesRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../testing.ts";

describe("POST /v2/keys.setRoles answering 200", () => {
  it("answers the key's roles as the array data, each with its permissions and a description only when set", async () => {
    const seen: SetRolesRequest[] = [];
    const h = harness({
      keys: {
        setRoles(req) {
          seen.push(req);
          return {
            roles: [
              {
                id: "role_1",
                name: "admin",
                description: "Everything",
                permissions: [
                  { id: "perm_1", name: "Read", slug: "documents.read", description: "Read documents" },
                ],
              },
              { id: "role_2", name: "viewer", permissions: [] },
            ],
          };
        },
      },
    });
    const res = await h.post("keys.setRoles", { keyId: "key_1", roles: ["admin", "viewer"] });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      {
        id: "role_1",
        name: "admin",
        description: "Everything",
        permissions: [{ id: "perm_1", name: "Read", slug: "documents.read", description: "Read documents" }],
      },
      { id: "role_2", name: "viewer", permissions: [] },
    ]);
    expect(seen.map((r) => [r.keyId, r.roles])).toEqual([["key_1", ["admin", "viewer"]]]);
  });

  it("answers data [] when the key has no roles left", async () => {
    const h = harness({ keys: { setRoles: () => ({ roles: [] }) } });
    const res = await h.post("keys.setRoles", { keyId: "key_1", roles: ["admin"] });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });

  it("sends an empty list, which clears the key's roles", async () => {
    const seen: SetRolesRequest[] = [];
    const h = harness({
      keys: {
        setRoles(req) {
          seen.push(req);
          return { roles: [] };
        },
      },
    });
    const res = await h.post("keys.setRoles", { keyId: "key_1", roles: [] });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(seen.map((r) => r.roles)).toEqual([[]]);
  });
});
