import { ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { beforeAll, describe, expect, it } from "vitest";
import { callerOf, rejection } from "../testing/in-memory-keys.ts";
import { keysInstancesOverNats } from "../testing/keys-instances.ts";
import { createWorkspace } from "./admin.ts";

// forwardAuth.createPolicy and updatePolicy on PostgreSQL: a policy names an API of the caller's
// workspace, and any other apiId (missing, deleted, another workspace's) gets one answer.

const keys = keysInstancesOverNats("keys-policy-api-test");
let WS: string;
let OTHER: string;
beforeAll(async () => {
  WS = (await createWorkspace(keys.db.sql, "edge")).workspaceId;
  OTHER = (await createWorkspace(keys.db.sql, "other")).workspaceId;
});

const NOT_FOUND = { reason: ErrorReason.API_NOT_FOUND, message: "The specified API was not found." };

describe("a forward-auth policy's apiId", () => {
  it("is stored when the API is the workspace's, and refused as a missing API when it is missing, deleted or another workspace's", async () => {
    const a = await keys.instance();
    const admin = callerOf(WS, "*");
    const policies = callerOf(WS, "forward_auth.*.*");
    const { apiId } = await a.client.createApi({ caller: admin, name: "edge" });
    const { apiId: theirs } = await a.client.createApi({ caller: callerOf(OTHER, "*"), name: "theirs" });
    const { apiId: deleted } = await a.client.createApi({ caller: admin, name: "gone" });
    await a.client.deleteApi({ caller: admin, apiId: deleted });
    const def = (name: string, api: string) => JSON.stringify({ name, apiId: api, paths: ["/orders/**"] });

    const made = await a.client.createForwardAuthPolicy({
      caller: policies,
      definitionJson: def("orders", apiId),
    });
    expect(made.position).toBe(0);

    const answers: unknown[] = [];
    for (const api of ["api_does_not_exist", theirs, deleted]) {
      answers.push(
        await rejection(
          a.client.createForwardAuthPolicy({ caller: policies, definitionJson: def("new", api) }),
        ),
        await rejection(
          a.client.updateForwardAuthPolicy({
            caller: policies,
            policyId: made.policyId,
            definitionJson: def("orders", api),
            position: 0,
          }),
        ),
      );
    }
    expect(answers).toEqual(Array(6).fill(NOT_FOUND));

    // Nothing was stored or replaced: the one policy, as it was created.
    const listed = await a.client.listForwardAuthPolicies({ caller: policies });
    expect(listed.policies.map((p) => [p.policyId, JSON.parse(p.definitionJson).apiId])).toEqual([
      [made.policyId, apiId],
    ]);
    // Each refusal is audited with the missing API's code, and names no resource of the other workspace.
    const records = await a.deps.store.listAudit(WS, { limit: 50 });
    const failures = records.filter((r) => r.outcome === "failure");
    expect(failures.map((r) => [r.operation, r.errorCode]).sort()).toEqual([
      ...Array(3).fill(["forwardAuth.createPolicy", "API_NOT_FOUND"]),
      ...Array(3).fill(["forwardAuth.updatePolicy", "API_NOT_FOUND"]),
    ]);
    expect(JSON.stringify(failures)).not.toContain(theirs);
    // The other workspace's log holds only its own doings: nothing says its API was asked about.
    const theirLog = await a.deps.store.listAudit(OTHER, { limit: 50 });
    expect(theirLog.filter((r) => r.operation.startsWith("forwardAuth."))).toEqual([]);

    const updated = await a.client.updateForwardAuthPolicy({
      caller: policies,
      policyId: made.policyId,
      definitionJson: JSON.stringify({ name: "orders", apiId, permissions: "orders.read" }),
    });
    expect(JSON.parse(updated.policy!.definitionJson)).toEqual({
      name: "orders",
      apiId,
      permissions: "orders.read",
    });
  });
});
