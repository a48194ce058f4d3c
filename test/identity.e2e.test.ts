import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./harness.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

describe("identities, permissions and roles through the gateway (separate processes)", () => {
  it("creates an identity and answers 409 for a duplicate externalId", async () => {
    const created = await stack.call("identities.createIdentity", {
      externalId: "user_e2e",
      meta: { plan: "pro" },
    });
    expect(created.status).toBe(200);
    expect(created.body.data.identityId).toMatch(/^id_/);
    const read = await stack.call("identities.getIdentity", { identity: "user_e2e" });
    expect(read.body.data).toMatchObject({
      id: created.body.data.identityId,
      externalId: "user_e2e",
      meta: { plan: "pro" },
    });
    const dup = await stack.call("identities.createIdentity", { externalId: "user_e2e" });
    expect(dup.status).toBe(409);
    expect(dup.body.error.type).toBe("https://unkey.com/docs/errors/unkey/data/identity_already_exists");
  });

  it("creates permissions and a role holding them", async () => {
    expect(
      (await stack.call("permissions.createPermission", { name: "read", slug: "documents.read" })).status,
    ).toBe(200);
    const role = await stack.call("permissions.createRole", {
      name: "reader",
      permissions: ["documents.read"],
    });
    expect(role.status).toBe(200);
    const read = await stack.call("permissions.getRole", { role: "reader" });
    expect(read.body.data.permissions.map((p: { slug: string }) => p.slug)).toEqual(["documents.read"]);
  });
});
