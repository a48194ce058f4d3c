import { ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { callerOf, rejection } from "../testing/in-memory-keys.ts";
import { keysInstancesOverNats } from "../testing/keys-instances.ts";
import { CHECKSUMMED_KEY_PATTERN } from "./leaks/key-format.ts";

// apis.updateApi on PostgreSQL, with two instances over real NATS: a change made through one applies
// at the next verification on the other, whose cached keys carried the API's old allow-list.

const caller = callerOf("ws_default", "*");
const { instance } = keysInstancesOverNats("keys-update-api-test");

describe("apis.updateApi", () => {
  it("changes each setting given, keeps the others, and answers the API as it is now", async () => {
    const a = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "payments", ipAllowList: ["10.0.0.0/8"] });
    const { api } = await a.client.updateApi({ caller, apiId, leakPolicy: "flag", expiringNoticeDays: 30 });
    expect(api).toMatchObject({
      id: apiId,
      name: "payments",
      keyFormat: "plain",
      leakPolicy: "flag",
      ipAllowList: ["10.0.0.0/8"],
      expiringNoticeDays: 30,
    });
    const renamed = await a.client.updateApi({ caller, apiId, name: "billing", ipAllowList: { values: [] } });
    expect(renamed.api).toMatchObject({
      name: "billing",
      leakPolicy: "flag",
      ipAllowList: [],
      expiringNoticeDays: 30,
    });
    expect((await a.client.getApi({ caller, apiId })).api).toMatchObject({
      name: "billing",
      ipAllowList: [],
    });
    const audit = await a.deps.store.listAudit(caller.workspaceId, { limit: 10, resourceId: apiId });
    expect(audit.filter((r) => r.operation === "apis.updateApi").map((r) => r.fields.sort())).toEqual([
      ["ipAllowList", "name"],
      ["expiringNoticeDays", "leakPolicy"],
    ]);
  });

  it("applies a new API allow-list at the next verification on another instance", async () => {
    const a = await instance();
    const b = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "allow-listed" });
    const { key } = await a.client.createKey({ caller, apiId });
    const fromB = async (clientIp: string) => (await b.client.verifyKey({ caller, key, clientIp })).code;
    expect(await fromB("198.51.100.7")).toBe(VerifyCode.VALID);

    await a.client.updateApi({ caller, apiId, ipAllowList: { values: ["203.0.113.0/24"] } });
    await a.bus.nc.flush();
    await b.bus.nc.flush();
    expect(await fromB("198.51.100.7")).toBe(VerifyCode.FORBIDDEN_IP);
    expect(await fromB("203.0.113.9")).toBe(VerifyCode.VALID);

    await a.client.updateApi({ caller, apiId, ipAllowList: { values: [] } });
    await a.bus.nc.flush();
    await b.bus.nc.flush();
    expect(await fromB("198.51.100.7")).toBe(VerifyCode.VALID);
  });

  it("shapes keys created afterwards with a new keyFormat; keys made before keep verifying", async () => {
    const a = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "formats" });
    const before = (await a.client.createKey({ caller, apiId, prefix: "acme" })).key;
    expect(before).not.toMatch(CHECKSUMMED_KEY_PATTERN);
    await a.client.updateApi({ caller, apiId, keyFormat: "checksum" });
    const after = (await a.client.createKey({ caller, apiId, prefix: "acme" })).key;
    expect(after).toMatch(CHECKSUMMED_KEY_PATTERN);
    expect((await a.client.verifyKey({ caller, key: before })).code).toBe(VerifyCode.VALID);
    expect((await a.client.verifyKey({ caller, key: after })).code).toBe(VerifyCode.VALID);
  });

  it("answers API_NOT_FOUND for a deleted API, one of another workspace, and without update_api on it", async () => {
    const a = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "gone" });
    const other = callerOf("ws_update_api_other", "*");
    expect((await rejection(a.client.updateApi({ caller: other, apiId, name: "mine" }))).reason).toBe(
      ErrorReason.API_NOT_FOUND,
    );
    const readOnly = callerOf(caller.workspaceId, `api.${apiId}.read_api`);
    expect((await rejection(a.client.updateApi({ caller: readOnly, apiId, name: "mine" }))).reason).toBe(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    const allowed = callerOf(caller.workspaceId, `api.${apiId}.update_api`);
    expect((await a.client.updateApi({ caller: allowed, apiId, name: "mine" })).api?.name).toBe("mine");
    await a.client.deleteApi({ caller, apiId });
    expect((await rejection(a.client.updateApi({ caller, apiId, name: "again" }))).reason).toBe(
      ErrorReason.API_NOT_FOUND,
    );
    expect((await a.client.getApi({ caller: other, apiId }).catch(() => undefined))?.api).toBeUndefined();
  });

  it("sets, replaces and clears creditThresholds, kept as createApi keeps them, each change in the audit log", async () => {
    const a = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "credits", creditThresholds: [50] });
    const set = await a.client.updateApi({ caller, apiId, creditThresholds: { values: [10, 75, 10, 0] } });
    expect(set.api?.creditThresholds).toEqual([75, 10, 0]);
    expect((await a.client.getApi({ caller, apiId })).api).toMatchObject({
      name: "credits",
      creditThresholds: [75, 10, 0],
    });
    // Another field alone leaves them as they are.
    await a.client.updateApi({ caller, apiId, name: "credits-2" });
    expect((await a.client.getApi({ caller, apiId })).api?.creditThresholds).toEqual([75, 10, 0]);
    const cleared = await a.client.updateApi({ caller, apiId, creditThresholds: { values: [] } });
    expect(cleared.api?.creditThresholds).toEqual([]);
    expect((await a.client.getApi({ caller, apiId })).api?.creditThresholds).toEqual([]);

    const bad = await rejection(
      a.client.updateApi({ caller, apiId, creditThresholds: { values: [20, 101] } }),
    );
    expect(bad).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: expect.stringContaining("each credit threshold is a whole percentage from 0 to 100"),
    });
    const many = await rejection(
      a.client.updateApi({
        caller,
        apiId,
        creditThresholds: { values: Array.from({ length: 11 }, (_, i) => i) },
      }),
    );
    expect(many.message).toContain("creditThresholds holds at most 10 percentages");
    expect((await a.client.getApi({ caller, apiId })).api?.creditThresholds).toEqual([]);

    const audit = await a.deps.store.listAudit(caller.workspaceId, { limit: 20, resourceId: apiId });
    expect(
      audit
        .filter((r) => r.operation === "apis.updateApi")
        .map((r) => [r.outcome, r.errorCode ?? null, r.fields]),
    ).toEqual([
      ["failure", "INVALID_INPUT", []],
      ["failure", "INVALID_INPUT", []],
      ["success", null, ["creditThresholds"]],
      ["success", null, ["name"]],
      ["success", null, ["creditThresholds"]],
    ]);
  });

  it("refuses a bad entry naming it, an empty name and an update of nothing", async () => {
    const a = await instance();
    const { apiId } = await a.client.createApi({ caller, name: "checked" });
    const bad = await rejection(
      a.client.updateApi({ caller, apiId, ipAllowList: { values: ["10.0.0.0/8", "300.1.1.1"] } }),
    );
    expect([bad.reason, bad.message]).toEqual([
      ErrorReason.INVALID_INPUT,
      expect.stringContaining("'300.1.1.1' is neither an IP address nor a CIDR"),
    ]);
    expect((await rejection(a.client.updateApi({ caller, apiId, name: " " }))).reason).toBe(
      ErrorReason.INVALID_INPUT,
    );
    expect((await rejection(a.client.updateApi({ caller, apiId }))).message).toContain("nothing to update");
    expect((await a.client.getApi({ caller, apiId })).api?.name).toBe("checked");
  });
});
