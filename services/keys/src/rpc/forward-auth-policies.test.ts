import { fromBinary } from "@bufbuild/protobuf";
import { ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { ForwardAuthPoliciesChangedSchema } from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { MemoryBus } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";
import {
  FORWARD_AUTH_POLICIES_CHANGED,
  MAX_POLICIES_PER_WORKSPACE,
  MAX_POLICY_DEFINITION_BYTES,
} from "./forward-auth-policies.ts";

const WS = "ws_default";
const ALL = callerOf(WS, "forward_auth.*.*");
/** The API each workspace's policies name: api_<workspace>, which memoryKeysWithApis stores. */
const apiOf = (workspaceId: string) => `api_${workspaceId}`;
const def = (name: string, extra: Record<string, unknown> = {}, workspaceId = WS) =>
  JSON.stringify({ name, apiId: apiOf(workspaceId), ...extra });
const WORKSPACES = [WS, "ws_other", "ws_attacker", "ws_victim"];

/** The keys service in memory, each of WORKSPACES holding the API its policies name. */
function memoryKeysWithApis(options: Parameters<typeof memoryKeys>[0] = {}) {
  const keys = memoryKeys(options);
  for (const workspaceId of WORKSPACES) {
    void keys.deps.store.createApi({ id: apiOf(workspaceId), workspaceId, name: "edge", createdAt: 0 });
  }
  return keys;
}

function withBus() {
  const bus = new MemoryBus();
  const changed: string[] = [];
  bus.subscribe(FORWARD_AUTH_POLICIES_CHANGED, (d) =>
    changed.push(fromBinary(ForwardAuthPoliciesChangedSchema, d).workspaceId),
  );
  return { ...memoryKeysWithApis({ bus }), changed };
}

describe("the forward-auth policy RPCs", () => {
  it("creates, reads, lists in match order, moves, replaces and deletes, announcing each change", async () => {
    const { client, changed } = withBus();
    const a = await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("a") });
    const d = await client.createForwardAuthPolicy({
      caller: ALL,
      definitionJson: def("d"),
      isDefault: true,
    });
    const b = await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("b"), position: 0 });
    expect([a.position, d.position, b.position]).toEqual([0, -1, 0]);
    expect(a.policyId).toMatch(/^fap_/);
    const names = async () =>
      (await client.listForwardAuthPolicies({ caller: ALL })).policies.map((p) => [
        JSON.parse(p.definitionJson).name,
        p.position,
        p.isDefault,
      ]);
    expect(await names()).toEqual([
      ["b", 0, false],
      ["a", 1, false],
      ["d", -1, true],
    ]);
    await client.updateForwardAuthPolicy({ caller: ALL, policyId: b.policyId, position: 5 });
    const updated = await client.updateForwardAuthPolicy({
      caller: ALL,
      policyId: a.policyId,
      definitionJson: def("a2", { permissions: "api.read" }),
    });
    expect(JSON.parse(updated.policy!.definitionJson)).toEqual({
      name: "a2",
      apiId: apiOf(WS),
      permissions: "api.read",
    });
    expect(await names()).toEqual([
      ["a2", 0, false],
      ["b", 1, false],
      ["d", -1, true],
    ]);
    const unchanged = await client.updateForwardAuthPolicy({ caller: ALL, policyId: b.policyId });
    expect(unchanged.policy?.position).toBe(1);
    const got = await client.getForwardAuthPolicy({ caller: ALL, policyId: b.policyId });
    expect(got.policy?.position).toBe(1);
    await client.deleteForwardAuthPolicy({ caller: ALL, policyId: a.policyId });
    expect(await names()).toEqual([
      ["b", 0, false],
      ["d", -1, true],
    ]);
    expect(changed).toEqual([WS, WS, WS, WS, WS, WS]);
  });

  it("pages in match order", async () => {
    const { client } = memoryKeysWithApis();
    for (const n of ["p0", "p1", "p2"])
      await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def(n) });
    const first = await client.listForwardAuthPolicies({ caller: ALL, limit: 2 });
    expect([first.policies.map((p) => p.position), first.hasMore]).toEqual([[0, 1], true]);
    const next = await client.listForwardAuthPolicies({ caller: ALL, limit: 2, after: 1 });
    expect([next.policies.map((p) => p.position), next.hasMore]).toEqual([[2], false]);
  });

  it("answers another workspace's policy as a missing one, and a taken name or default as a conflict", async () => {
    const { client } = memoryKeysWithApis();
    const a = await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("a") });
    const other = callerOf("ws_other", "forward_auth.*.*");
    for (const call of [
      client.getForwardAuthPolicy({ caller: other, policyId: a.policyId }),
      client.updateForwardAuthPolicy({ caller: other, policyId: a.policyId, position: 0 }),
      client.deleteForwardAuthPolicy({ caller: other, policyId: a.policyId }),
    ]) {
      expect(await rejection(call)).toEqual({
        reason: ErrorReason.FORWARD_AUTH_POLICY_NOT_FOUND,
        message: "The specified forward-auth policy was not found.",
      });
    }
    expect((await client.listForwardAuthPolicies({ caller: other })).policies).toEqual([]);
    expect(
      (await rejection(client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("a") }))).reason,
    ).toBe(ErrorReason.FORWARD_AUTH_POLICY_ALREADY_EXISTS);
    await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("d"), isDefault: true });
    expect(
      await rejection(
        client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("e"), isDefault: true }),
      ),
    ).toEqual({
      reason: ErrorReason.FORWARD_AUTH_POLICY_ALREADY_EXISTS,
      message: "This workspace already has a default policy: update it, or delete it first.",
    });
  });

  it("refuses, on create and on update, an apiId that is missing, deleted or another workspace's, with one answer, changing nothing", async () => {
    const { client, deps, changed } = withBus();
    const { apiId: deleted } = await client.createApi({ caller: callerOf(WS, "*"), name: "gone" });
    await client.deleteApi({ caller: callerOf(WS, "*"), apiId: deleted });
    const a = await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("a") });
    const d = await client.createForwardAuthPolicy({
      caller: ALL,
      definitionJson: def("d"),
      isDefault: true,
    });
    const announced = changed.length;
    for (const apiId of ["api_missing", apiOf("ws_other"), deleted]) {
      for (const [call, isDefault] of [
        [client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("b", { apiId }) }), false],
        [
          client.createForwardAuthPolicy({
            caller: ALL,
            definitionJson: def("e", { apiId }),
            isDefault: true,
          }),
          true,
        ],
        [
          client.updateForwardAuthPolicy({
            caller: ALL,
            policyId: a.policyId,
            definitionJson: def("a", { apiId }),
          }),
          false,
        ],
        [
          client.updateForwardAuthPolicy({
            caller: ALL,
            policyId: d.policyId,
            definitionJson: def("d", { apiId }),
          }),
          true,
        ],
      ] as const) {
        expect([apiId, isDefault, await rejection(call)]).toEqual([
          apiId,
          isDefault,
          { reason: ErrorReason.API_NOT_FOUND, message: "The specified API was not found." },
        ]);
      }
    }
    const listed = (await client.listForwardAuthPolicies({ caller: ALL })).policies;
    expect(listed.map((p) => JSON.parse(p.definitionJson))).toEqual([
      { name: "a", apiId: apiOf(WS) },
      { name: "d", apiId: apiOf(WS) },
    ]);
    expect(changed.length).toBe(announced);
    const records = await deps.store.listAudit(WS, { limit: 50 });
    const failures = records.filter((r) => r.outcome === "failure");
    expect(failures.map((r) => [r.operation, r.errorCode]).sort()).toEqual([
      ...Array(6).fill(["forwardAuth.createPolicy", "API_NOT_FOUND"]),
      ...Array(6).fill(["forwardAuth.updatePolicy", "API_NOT_FOUND"]),
    ]);
  });

  it("accepts a policy naming an API of the caller's workspace, and moves a policy without looking at its API", async () => {
    const { client, deps } = memoryKeysWithApis();
    const a = await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("a") });
    // The API is deleted afterwards: reordering keeps the definition as it is, and needs no API.
    await deps.store.deleteApi(apiOf(WS), 1);
    const moved = await client.updateForwardAuthPolicy({ caller: ALL, policyId: a.policyId, position: 3 });
    expect(moved.policy?.position).toBe(0);
  });

  it("refuses a root key without the operation's permission, and bad definitions, leaving failure records", async () => {
    const { client, deps } = memoryKeysWithApis();
    const reader = callerOf(WS, "forward_auth.*.read_policy");
    expect(
      (await rejection(client.createForwardAuthPolicy({ caller: reader, definitionJson: def("a") }))).reason,
    ).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
    expect(
      (await rejection(client.createForwardAuthPolicy({ caller: ALL, definitionJson: "{nope" }))).message,
    ).toContain("the policy is not JSON");
    expect(
      (
        await rejection(
          client.createForwardAuthPolicy({
            caller: ALL,
            definitionJson: def("big", { tags: ["x".repeat(MAX_POLICY_DEFINITION_BYTES)] }),
          }),
        )
      ).reason,
    ).toBe(ErrorReason.INVALID_INPUT);
    const records = await deps.store.listAudit(WS, { limit: 10 });
    expect(records.map((r) => [r.operation, r.outcome, r.errorCode]).sort()).toEqual([
      ["forwardAuth.createPolicy", "failure", "INSUFFICIENT_PERMISSIONS"],
      ["forwardAuth.createPolicy", "failure", "INVALID_INPUT"],
      ["forwardAuth.createPolicy", "failure", "INVALID_INPUT"],
    ]);
  });

  it("records each change in the audit log, naming the policy", async () => {
    const { client, deps } = memoryKeysWithApis();
    const a = await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("a") });
    await client.updateForwardAuthPolicy({ caller: ALL, policyId: a.policyId, position: 0 });
    await client.deleteForwardAuthPolicy({ caller: ALL, policyId: a.policyId });
    const records = await deps.store.listAudit(WS, { limit: 10 });
    // One clock tick for all three: sorted by operation, not by time.
    expect(records.map((r) => [r.operation, r.outcome, r.resources]).sort()).toEqual([
      ["forwardAuth.createPolicy", "success", [{ type: "forward_auth_policy", id: a.policyId }]],
      ["forwardAuth.deletePolicy", "success", [{ type: "forward_auth_policy", id: a.policyId }]],
      ["forwardAuth.updatePolicy", "success", [{ type: "forward_auth_policy", id: a.policyId }]],
    ]);
  });

  it("holds one workspace at its most policies while another still creates, lists and loads its own", async () => {
    const { client } = memoryKeysWithApis();
    const attacker = callerOf("ws_attacker", "forward_auth.*.*");
    const made = await Promise.all(
      Array.from({ length: MAX_POLICIES_PER_WORKSPACE + 20 }, (_, i) =>
        client
          .createForwardAuthPolicy({ caller: attacker, definitionJson: def(`x${i}`, {}, "ws_attacker") })
          .then(
            () => "made",
            (err: unknown) => (err as Error).message,
          ),
      ),
    );
    expect(made.filter((m) => m === "made").length).toBe(MAX_POLICIES_PER_WORKSPACE);
    expect(made.filter((m) => m !== "made")[0]).toContain(
      `A workspace holds at most ${MAX_POLICIES_PER_WORKSPACE} forward-auth policies`,
    );
    const victim = callerOf("ws_victim", "forward_auth.*.*");
    await client.createForwardAuthPolicy({ caller: victim, definitionJson: def("mine", {}, "ws_victim") });
    const loaded = await client.loadForwardAuthPolicies({
      caller: callerOf("ws_victim", "forward_auth.mine.verify"),
    });
    expect(loaded.policies.map((p) => JSON.parse(p.definitionJson).name)).toEqual(["mine"]);
  });

  it("loads policies only for a root key that may verify through one of them", async () => {
    const { client } = memoryKeysWithApis();
    await client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("shop") });
    expect(
      (await client.loadForwardAuthPolicies({ caller: callerOf(WS, "forward_auth.shop.verify") })).policies
        .length,
    ).toBe(1);
    expect(
      (await rejection(client.loadForwardAuthPolicies({ caller: callerOf(WS, "forward_auth.other.verify") })))
        .reason,
    ).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
  });

  it("refuses, at its place, a definition the policy file's rules refuse, and hosts, paths or methods on the default", async () => {
    const { client } = memoryKeysWithApis();
    const create = (extra: Record<string, unknown>, isDefault = false) =>
      invalidAt(client.createForwardAuthPolicy({ caller: ALL, definitionJson: def("r", extra), isDefault }));
    expect(await create({ apiId: undefined })).toEqual({
      location: "/policy/apiId",
      message: "a policy needs an apiId",
    });
    expect(await create({ key: { from: "cookie" } })).toEqual({
      location: "/policy/key/name",
      message: "a key read from a cookie needs the cookie's name",
    });
    expect(await create({ key: { from: "bearer", name: "x" } })).toEqual({
      location: "/policy/key/name",
      message: "a bearer key is read from Authorization: remove name",
    });
    expect(await create({ key: { from: "query", name: "k" }, stripKey: true })).toEqual({
      location: "/policy/stripKey",
      message:
        "a key in a query cannot be stripped by the proxy's configuration: move it to a header or remove stripKey",
    });
    expect(await create({ paths: ["/x"] }, true)).toEqual({
      location: "/policy/paths",
      message: "a default policy matches what no other does: remove paths",
    });
    const d = await client.createForwardAuthPolicy({
      caller: ALL,
      definitionJson: def("d"),
      isDefault: true,
    });
    expect(
      await invalidAt(
        client.updateForwardAuthPolicy({
          caller: ALL,
          policyId: d.policyId,
          definitionJson: def("d", { methods: ["GET"] }),
        }),
      ),
    ).toEqual({
      location: "/policy/methods",
      message: "a default policy matches what no other does: remove methods",
    });
  });
});
