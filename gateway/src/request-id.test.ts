import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { describe, expect, it } from "vitest";
import { answeringEverything, harness } from "../testing/in-memory-gateway.ts";
import { OPERATIONS, type Operation, routes } from "./routes/index.ts";

const audited = (operation: Operation) => routes[operation].audited === true;

describe("the request id a management call carries for its audit record", () => {
  it("is set on exactly the operations that change state", () => {
    expect(OPERATIONS.filter(audited).sort()).toEqual(
      [
        "apis.createApi",
        "apis.deleteApi",
        "apis.updateApi",
        "forwardAuth.createPolicy",
        "forwardAuth.deletePolicy",
        "forwardAuth.updatePolicy",
        "identities.createIdentity",
        "identities.deleteIdentity",
        "identities.updateIdentity",
        "keys.addPermissions",
        "keys.addRoles",
        "keys.createKey",
        "keys.deleteKey",
        "keys.migrateKeys",
        "keys.removePermissions",
        "keys.removeRoles",
        "keys.rerollKey",
        "keys.setPermissions",
        "keys.setRoles",
        "keys.updateCredits",
        "keys.updateKey",
        "permissions.createPermission",
        "permissions.createRole",
        "permissions.deletePermission",
        "permissions.deleteRole",
        "permissions.setRolePermissions",
        "portal.createKey",
        "portal.createSession",
        "portal.endSession",
        "portal.exchangeCode",
        "portal.rerollKey",
        "portals.createPortal",
        "portals.deletePortal",
        "portals.revokeSession",
        "portals.updatePortal",
        "ratelimit.deleteOverride",
        "ratelimit.setOverride",
        "ratelimits.deleteOverride",
        "ratelimits.setOverride",
        "webhooks.create",
        "webhooks.delete",
        "webhooks.redeliver",
        "webhooks.update",
      ].sort(),
    );
  });

  it("is the answer's meta.requestId on a management call, and empty on verifications, limits and reads", async () => {
    const seen: { rpc: string; caller: Caller | undefined }[] = [];
    const h = harness(answeringEverything((caller, rpc) => seen.push({ rpc, caller })));
    for (const operation of OPERATIONS) {
      seen.length = 0;
      const res = await h.post(operation, routes[operation].example);
      expect(res.status, operation).toBe(200);
      const ids = [...new Set(seen.map((s) => s.caller?.requestId ?? ""))];
      expect(ids, operation).toEqual([audited(operation) ? res.body.meta.requestId : ""]);
    }
  });
});
