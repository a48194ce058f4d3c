import { type AuditRecord, auditService, MemoryAuditLog } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { harness, WORKSPACE } from "../../../testing/in-memory-gateway.ts";

const record = (
  id: string,
  time: number,
  operation: string,
  more: Partial<AuditRecord> = {},
): AuditRecord => ({
  id,
  workspaceId: WORKSPACE,
  time,
  actorType: "root_key",
  actorId: "rk_1",
  operation,
  resources: [{ type: "key", id: "key_1" }],
  outcome: "success",
  errorCode: null,
  requestId: `req_${id}`,
  fields: ["name"],
  ...more,
});

/** Each context's AuditService over its own in-memory records, as keys, identity, ratelimit and webhooks serve theirs. */
function withRecords() {
  const logs = {
    keys: new MemoryAuditLog(),
    identity: new MemoryAuditLog(),
    ratelimit: new MemoryAuditLog(),
    webhooks: new MemoryAuditLog(),
  };
  logs.keys.add(record("audit_k1", 30, "keys.createKey"));
  logs.keys.add(
    record("audit_k2", 10, "keys.updateKey", { outcome: "failure", errorCode: "KEY_NOT_FOUND", fields: [] }),
  );
  logs.identity.add(
    record("audit_i1", 20, "identities.createIdentity", { resources: [{ type: "identity", id: "id_1" }] }),
  );
  logs.ratelimit.add(record("audit_r1", 20, "ratelimit.setOverride", { actorType: "cli", actorId: "cli" }));
  logs.ratelimit.add(record("audit_r2", 40, "ratelimit.deleteOverride", { workspaceId: "ws_other" }));
  logs.webhooks.add(
    record("audit_w1", 25, "webhooks.disable", {
      actorType: "system",
      actorId: "system",
      requestId: "",
      resources: [{ type: "webhook", id: "wh_1" }],
      fields: ["enabled", "disabledReason"],
    }),
  );
  return harness({
    audit: {
      keys: auditService(logs.keys),
      identity: auditService(logs.identity),
      ratelimit: auditService(logs.ratelimit),
      webhooks: auditService(logs.webhooks),
    },
  });
}

describe("POST /v2/auditLogs.list answering 200", () => {
  const h = withRecords();

  it("merges the four contexts' records newest first (time, then id), the caller's workspace only", async () => {
    const res = await h.post("auditLogs.list", {});
    expect(res.status).toBe(200);
    expect(res.body.data.map((r: { auditLogId: string }) => r.auditLogId)).toEqual([
      "audit_k1",
      "audit_w1",
      "audit_r1",
      "audit_i1",
      "audit_k2",
    ]);
    expect(res.body.pagination).toEqual({ hasMore: false });
    expect(res.body.data[4]).toEqual({
      auditLogId: "audit_k2",
      time: 10,
      actor: { type: "root_key", id: "rk_1" },
      operation: "keys.updateKey",
      resources: [{ type: "key", id: "key_1" }],
      outcome: "failure",
      error: { code: "KEY_NOT_FOUND" },
      requestId: "req_audit_k2",
      fields: [],
    });
    expect(res.body.data[2].actor).toEqual({ type: "cli", id: "cli" });
    expect(res.body.data[1]).toEqual({
      auditLogId: "audit_w1",
      time: 25,
      actor: { type: "system", id: "system" },
      operation: "webhooks.disable",
      resources: [{ type: "webhook", id: "wh_1" }],
      outcome: "success",
      error: null,
      requestId: "",
      fields: ["enabled", "disabledReason"],
    });
    expect(res.body.data[0].error).toBeNull();
  });

  it("pages with the cursor it answers, each record once", async () => {
    const first = await h.post("auditLogs.list", { limit: 3 });
    expect(first.body.data).toHaveLength(3);
    expect(first.body.pagination).toEqual({ cursor: expect.any(String), hasMore: true });
    const next = await h.post("auditLogs.list", { limit: 3, cursor: first.body.pagination.cursor });
    expect(next.body.data.map((r: { auditLogId: string }) => r.auditLogId)).toEqual(["audit_i1", "audit_k2"]);
    expect(next.body.pagination).toEqual({ hasMore: false });
  });

  it("filters by actor, resource, operation, outcome and time in every context", async () => {
    const ids = async (body: Record<string, unknown>) =>
      (await h.post("auditLogs.list", body)).body.data.map((r: { auditLogId: string }) => r.auditLogId);
    expect(await ids({ actorId: "cli" })).toEqual(["audit_r1"]);
    expect(await ids({ actorId: "system" })).toEqual(["audit_w1"]);
    expect(await ids({ resourceId: "wh_1" })).toEqual(["audit_w1"]);
    expect(await ids({ resourceId: "id_1" })).toEqual(["audit_i1"]);
    expect(await ids({ operation: "keys.createKey" })).toEqual(["audit_k1"]);
    expect(await ids({ outcome: "failure" })).toEqual(["audit_k2"]);
    expect(await ids({ start: 11, end: 30 })).toEqual(["audit_w1", "audit_r1", "audit_i1"]);
  });
});
