import { create } from "@bufbuild/protobuf";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { describe, expect, it } from "vitest";
import {
  type AuditRecord,
  auditFailure,
  auditSuccess,
  auditTableSql,
  decodeAuditCursor,
  encodeAuditCursor,
  MemoryAuditLog,
  withFailureAudit,
} from "./audit.ts";
import { domainError, ErrorReason, errorDetailOf } from "./errors.ts";

const caller = create(CallerSchema, {
  workspaceId: "ws_a",
  rootKeyId: "rk_a",
  permissions: ["*"],
  requestId: "req_1",
});

const at = (time: number, id: string, more: Partial<AuditRecord> = {}): AuditRecord => ({
  ...auditSuccess(caller, "ws_a", "keys.updateKey", [{ type: "key", id: "key_1" }], ["name"], time),
  id,
  ...more,
});

describe("the audit cursor", () => {
  it("round-trips a position and refuses anything it did not make, saying what to pass", () => {
    const p = { time: 1_767_225_600_000, id: "audit_2cGKbMxRjIzhCxo1IdjH3a" };
    expect(encodeAuditCursor(p)).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeAuditCursor(encodeAuditCursor(p))).toEqual(p);
    for (const bad of ["", "!!", "eA", Buffer.from("1.a b").toString("base64url"), "x".repeat(1025)]) {
      let err: unknown;
      try {
        decodeAuditCursor(bad);
      } catch (e) {
        err = e;
      }
      expect(errorDetailOf(err)?.reason, bad).toBe(ErrorReason.INVALID_INPUT);
      expect(errorDetailOf(err)?.violations[0]).toMatchObject({
        location: "/cursor",
        fix: "Pass pagination.cursor of the previous answer unchanged, or omit cursor to start from the newest record.",
      });
    }
  });
});

describe("the actors", () => {
  it("records the system as actor system, with no request id", () => {
    const r = auditSuccess("system", "ws_a", "webhooks.disable", [{ type: "webhook", id: "wh_1" }], [], 5);
    expect([r.actorType, r.actorId, r.requestId, r.outcome]).toEqual(["system", "system", "", "success"]);
  });

  it("makes a table for root keys and the CLI by default, as the applied migrations of keys, identity and ratelimit did", () => {
    expect(auditTableSql("t")).toContain("CHECK (actor_type IN ('root_key', 'cli'))");
    expect(auditTableSql("t", ["root_key", "system"])).toContain(
      "CHECK (actor_type IN ('root_key', 'system'))",
    );
  });
});

describe("MemoryAuditLog", () => {
  it("lists one workspace newest first (time, then id), strictly after the cursor, with every filter", async () => {
    const log = new MemoryAuditLog();
    for (const r of [
      at(10, "audit_b"),
      at(20, "audit_a"),
      at(10, "audit_c", { outcome: "failure", errorCode: "KEY_NOT_FOUND" }),
      at(30, "audit_d", { workspaceId: "ws_b" }),
      at(5, "audit_e", { actorType: "cli", actorId: "cli", operation: "cli.createRootKey", resources: [] }),
    ]) {
      await log.recordAudit(r);
    }
    const ids = async (q: Parameters<MemoryAuditLog["listAudit"]>[1]) =>
      (await log.listAudit("ws_a", q)).map((r) => r.id);
    expect(await ids({ limit: 10 })).toEqual(["audit_a", "audit_c", "audit_b", "audit_e"]);
    expect(await ids({ limit: 2 })).toEqual(["audit_a", "audit_c"]);
    expect(await ids({ limit: 10, after: { time: 10, id: "audit_c" } })).toEqual(["audit_b", "audit_e"]);
    expect(await ids({ limit: 10, actorId: "cli" })).toEqual(["audit_e"]);
    expect(await ids({ limit: 10, resourceId: "key_1", outcome: "failure" })).toEqual(["audit_c"]);
    expect(await ids({ limit: 10, operation: "cli.createRootKey" })).toEqual(["audit_e"]);
    expect(await ids({ limit: 10, start: 10, end: 20 })).toEqual(["audit_c", "audit_b"]);
    expect((await log.listAudit("ws_b", { limit: 10 })).map((r) => r.id)).toEqual(["audit_d"]);
    expect(log.prune(10)).toBe(1);
    expect(await ids({ limit: 10 })).toEqual(["audit_a", "audit_c", "audit_b"]);
  });
});

describe("withFailureAudit", () => {
  const setup = () => {
    const store = new MemoryAuditLog();
    return { store, audit: { store, now: () => 42 } };
  };

  it("writes one failure record with the reason of a refusal, and throws the refusal on", async () => {
    const { store, audit } = setup();
    const refusal = domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
    await expect(
      withFailureAudit(audit, caller, "keys.updateKey", [{ type: "key", id: "key_2cGKbMxRjGzhCxo1" }], () =>
        Promise.reject(refusal),
      ),
    ).rejects.toBe(refusal);
    expect(store.records).toEqual([
      {
        id: expect.stringMatching(/^audit_/),
        workspaceId: "ws_a",
        time: 42,
        actorType: "root_key",
        actorId: "rk_a",
        operation: "keys.updateKey",
        resources: [{ type: "key", id: "key_2cGKbMxRjGzhCxo1" }],
        outcome: "failure",
        errorCode: "KEY_NOT_FOUND",
        requestId: "req_1",
        fields: [],
      },
    ]);
  });

  it("writes nothing for a success (the store writes that with the change), a fault, or no caller", async () => {
    const { store, audit } = setup();
    expect(await withFailureAudit(audit, caller, "apis.createApi", [], async () => "ok")).toBe("ok");
    await expect(
      withFailureAudit(audit, caller, "apis.createApi", [], () => Promise.reject(new Error("db down"))),
    ).rejects.toThrow("db down");
    await expect(
      withFailureAudit(audit, undefined, "apis.createApi", [], () =>
        Promise.reject(domainError(ErrorReason.UNAUTHENTICATED, "no caller")),
      ),
    ).rejects.toThrow("no caller");
    expect(store.records).toEqual([]);
    expect(auditFailure(caller, "x", [], domainError(ErrorReason.UNAVAILABLE, "later"), 1)).toBeUndefined();
  });

  it('names a resource only by an id of its type\'s shape: a key, an e-mail or a name leaves the type with id ""', () => {
    const refusal = domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
    const resources = [
      { type: "key", id: "sk_3ZbLk9qWmXpYtRvN2hJcFdEa7" },
      { type: "key", id: "key_3ZbLk9qWmXpYtRvN2" },
      { type: "key", id: "api_2cGKbMxRjGzhCxo1" },
      { type: "key", id: "key_2cGKbMxRjGzhCxo1" },
      { type: "identity", id: "ada@example.com" },
      { type: "identity", id: "id_2cGKbMxRjGzhCxo1" },
      { type: "role", id: "admin" },
      { type: "namespace", id: "rlns_2cGKbMxRjGzhCxo1" },
    ];
    expect(auditFailure(caller, "x", resources, refusal, 1)?.resources).toEqual([
      { type: "key", id: "" },
      { type: "key", id: "" },
      { type: "key", id: "" },
      { type: "key", id: "key_2cGKbMxRjGzhCxo1" },
      { type: "identity", id: "" },
      { type: "identity", id: "id_2cGKbMxRjGzhCxo1" },
      { type: "role", id: "" },
      { type: "namespace", id: "rlns_2cGKbMxRjGzhCxo1" },
    ]);
  });

  it("throws the refusal even when its record cannot be written", async () => {
    const refusal = domainError(ErrorReason.INVALID_INPUT, "bad");
    const broken = { recordAudit: () => Promise.reject(new Error("full")), listAudit: async () => [] };
    await expect(
      withFailureAudit({ store: broken, now: () => 1 }, caller, "x", [], () => Promise.reject(refusal)),
    ).rejects.toBe(refusal);
  });
});
