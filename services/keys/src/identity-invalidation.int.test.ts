import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { hashKey } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf } from "../testing/in-memory-keys.ts";
import { keysInstancesOverNats } from "../testing/keys-instances.ts";
import { limit } from "../testing/verification.ts";
import { keyChanged } from "./events.ts";

// Roles and identities cached for verification, dropped on every instance
// when the identity service announces a change over real NATS.

const caller = callerOf("ws_default", "*");
const { instance } = keysInstancesOverNats("keys-identity-test");

describe("identity caches across instances", () => {
  it("applies a role's permission change made through another instance at the next verification", async () => {
    const a = await instance();
    const b = await instance();
    await b.deps.identity.createRole({ caller, name: "viewer", permissions: ["documents.read"] });
    const { apiId } = await a.client.createApi({ caller, name: "roles" });
    const { keyId, key } = await a.client.createKey({ caller, apiId });
    await a.deps.store.updateKey(keyId, { roles: ["viewer"], updatedAt: Date.now() });
    keyChanged(a.deps, { workspaceId: caller.workspaceId, hash: hashKey(key), keyId });
    const query = { caller, key, permissions: "documents.write" };
    expect((await a.client.verifyKey(query)).code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);

    await b.deps.identity.setRolePermissions({
      caller,
      role: "viewer",
      permissions: ["documents.read", "documents.write"],
    });
    await b.bus.nc.flush();
    await a.bus.nc.flush();

    expect((await a.client.verifyKey(query)).code).toBe(VerifyCode.VALID);
  });

  it("applies an identity's new limits made through another instance at the next verification", async () => {
    const a = await instance();
    const b = await instance();
    const { identityId } = await b.deps.identity.createIdentity({
      caller,
      externalId: "user_nats",
      ratelimits: [limit("calls", 100, true)],
    });
    const { apiId } = await a.client.createApi({ caller, name: "identities" });
    const { keyId, key } = await a.client.createKey({ caller, apiId });
    await a.deps.store.updateKey(keyId, { identityId, updatedAt: Date.now() });
    keyChanged(a.deps, { workspaceId: caller.workspaceId, hash: hashKey(key), keyId });
    expect((await a.client.verifyKey({ caller, key })).identity?.ratelimits).toMatchObject([{ limit: 100n }]);

    await b.deps.identity.updateIdentity({
      caller,
      identity: identityId,
      ratelimits: { ratelimits: [limit("calls", 5, true)] },
    });
    await b.bus.nc.flush();
    await a.bus.nc.flush();

    const res = await a.client.verifyKey({ caller, key });
    expect(res.identity?.ratelimits).toMatchObject([{ limit: 5n }]);
    expect(res.ratelimits).toMatchObject([{ name: "calls", limit: 5n }]);
  });
});
