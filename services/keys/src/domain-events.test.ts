import type { DomainEvent } from "@latchkey/proto/common/v1/common_pb";
import { DOMAIN_EVENT_SUBJECT } from "@latchkey/runtime";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys } from "../testing/in-memory-keys.ts";
import type { MemoryKeysStore } from "./store/memory-keys-store.ts";

/** Each management operation of the keys service: its one DomainEvent after the change, and its one audit record. */
describe("keys' DomainEvents and audit records, in memory", () => {
  const setup = async () => {
    const events = keepingEventSink();
    const kit = memoryKeys({ events });
    const caller = { ...callerOf("ws_1", "*"), requestId: "req_test" };
    const apiId = await kit.seed.api();
    const { keyId } = await kit.seed.key({ apiId });
    await kit.rbac.role("admin");
    const from = {
      events: events.kept.length,
      audit: (kit.deps.store as MemoryKeysStore).audit.records.length,
    };
    /** What `run` published and recorded. */
    const after = async (run: () => Promise<unknown>) => {
      const e0 = events.kept.length;
      const a0 = (kit.deps.store as MemoryKeysStore).audit.records.length;
      await run().catch(() => {});
      return {
        events: events.kept
          .slice(e0)
          .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
          .map((e) => {
            const m = e.message as DomainEvent;
            return { type: m.type, workspaceId: m.workspaceId, data: JSON.parse(m.dataJson) };
          }),
        audit: (kit.deps.store as MemoryKeysStore).audit.records.slice(a0),
      };
    };
    return { ...kit, caller, apiId, keyId, from, after };
  };

  it("publishes exactly each operation's event, and records it once with the caller's request id", async () => {
    const { client, caller, apiId, keyId, after } = await setup();
    const created = await after(() => client.createKey({ caller, apiId, name: "n" }));
    expect(created.events).toEqual([
      { type: "key.created", workspaceId: "ws_1", data: { keyId: expect.stringMatching(/^key_/), apiId } },
    ]);
    expect(created.audit).toEqual([
      expect.objectContaining({
        operation: "keys.createKey",
        requestId: "req_test",
        outcome: "success",
        fields: ["name"],
      }),
    ]);
    const cases: [string, () => Promise<unknown>, string, unknown][] = [
      [
        "keys.updateKey",
        () => client.updateKey({ caller, keyId, name: "m", enabled: false }),
        "key.updated",
        { keyId, apiId, fields: ["name", "enabled"] },
      ],
      [
        "keys.updateCredits",
        () => client.updateCredits({ caller, keyId, operation: 1, value: 3n }),
        "key.updated",
        { keyId, apiId, fields: ["credits.remaining"] },
      ],
      [
        "keys.addPermissions",
        () => client.addPermissions({ caller, keyId, permissions: ["a.b"] }),
        "key.updated",
        { keyId, apiId, fields: ["permissions"] },
      ],
      [
        "keys.removePermissions",
        () => client.removePermissions({ caller, keyId, permissions: ["a.b"] }),
        "key.updated",
        { keyId, apiId, fields: ["permissions"] },
      ],
      [
        "keys.setPermissions",
        () => client.setPermissions({ caller, keyId, permissions: ["a.c"] }),
        "key.updated",
        { keyId, apiId, fields: ["permissions"] },
      ],
      [
        "keys.addRoles",
        () => client.addRoles({ caller, keyId, roles: ["admin"] }),
        "key.updated",
        { keyId, apiId, fields: ["roles"] },
      ],
      [
        "keys.removeRoles",
        () => client.removeRoles({ caller, keyId, roles: ["admin"] }),
        "key.updated",
        { keyId, apiId, fields: ["roles"] },
      ],
      [
        "keys.setRoles",
        () => client.setRoles({ caller, keyId, roles: ["admin"] }),
        "key.updated",
        { keyId, apiId, fields: ["roles"] },
      ],
    ];
    for (const [operation, run, type, data] of cases) {
      const got = await after(run);
      expect(got.events, operation).toEqual([{ type, workspaceId: "ws_1", data }]);
      expect(
        got.audit.map((r) => [r.operation, r.outcome, r.requestId]),
        operation,
      ).toEqual([[operation, "success", "req_test"]]);
    }
    const rerolled = await after(() => client.rerollKey({ caller, keyId, expiration: 0n }));
    expect(rerolled.events).toEqual([
      {
        type: "key.rerolled",
        workspaceId: "ws_1",
        data: { keyId, apiId, newKeyId: expect.stringMatching(/^key_/), expiresAt: null },
      },
    ]);
    const migrated = await after(() =>
      client.migrateKeys({
        caller,
        migrationId: "mig",
        apiId,
        keys: [{ hash: "a".repeat(64) }, { hash: "b".repeat(64) }],
      }),
    );
    expect(migrated.events.map((e) => e.type)).toEqual(["key.created", "key.created"]);
    expect(migrated.audit).toHaveLength(1);
    const deleted = await after(() => client.deleteKey({ caller, keyId, permanent: true }));
    expect(deleted.events).toEqual([
      { type: "key.deleted", workspaceId: "ws_1", data: { keyId, apiId, permanent: true } },
    ]);
    expect(deleted.audit.map((r) => r.fields)).toEqual([["permanent"]]);
  });

  it("publishes nothing for a refused operation and records only its failure", async () => {
    const { client, caller, keyId, after } = await setup();
    for (const run of [
      () => client.updateKey({ caller, keyId: "key_missing0000000", name: "x" }),
      () => client.deleteKey({ caller: { ...callerOf("ws_2", "*"), requestId: "req_test" }, keyId }),
      () => client.updateCredits({ caller, keyId, operation: 0, value: 1n }),
    ]) {
      const got = await after(run);
      expect(got.events).toEqual([]);
      expect(got.audit.map((r) => [r.outcome, r.errorCode])).toEqual([
        ["failure", expect.stringMatching(/^(KEY_NOT_FOUND|INVALID_INPUT)$/)],
      ]);
    }
  });

  it("publishes key.deleted and records a success once when two deletions of one key race: the other answers KEY_NOT_FOUND", async () => {
    const { client, caller, keyId, after } = await setup();
    let answers: PromiseSettledResult<unknown>[] = [];
    const got = await after(async () => {
      answers = await Promise.allSettled([
        client.deleteKey({ caller, keyId }),
        client.deleteKey({ caller, keyId }),
      ]);
    });
    expect(answers.map((a) => a.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(got.events.map((e) => e.type)).toEqual(["key.deleted"]);
    expect(got.audit.map((r) => [r.outcome, r.errorCode])).toEqual([
      ["success", null],
      ["failure", "KEY_NOT_FOUND"],
    ]);
  });

  it("names in a refusal's record only an id of a key's shape: a key typed as keyId leaves the type alone", async () => {
    const { client, caller, apiId, after } = await setup();
    const { key } = await client.createKey({ caller, apiId, prefix: "sk" });
    const missing = "key_2cGKbMxRjGzhCxo1";
    const typed = await after(() => client.deleteKey({ caller, keyId: key }));
    const byId = await after(() => client.deleteKey({ caller, keyId: missing }));
    expect(typed.audit.map((r) => [r.operation, r.errorCode, r.resources])).toEqual([
      ["keys.deleteKey", "KEY_NOT_FOUND", [{ type: "key", id: "" }]],
    ]);
    expect(JSON.stringify(typed.audit)).not.toContain(key.slice(3));
    expect(byId.audit.map((r) => r.resources)).toEqual([[{ type: "key", id: missing }]]);
  });
});
