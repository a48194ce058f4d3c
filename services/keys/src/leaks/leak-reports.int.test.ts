import { fromBinary } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import {
  connect,
  createLogger,
  DOMAIN_EVENT_SUBJECT,
  hashKey,
  MemoryBus,
  migrate,
  type Sql,
  TestClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf } from "../../testing/in-memory-keys.ts";
import { inProcessServices } from "../../testing/keys-deps.ts";
import { createKeysDeps, type KeysDeps } from "../deps.ts";
import { keysMigrations } from "../migrations.ts";
import { keysRoutes } from "../routes.ts";
import { leakReported } from "./leak-reports.ts";

// Leak reports on real PostgreSQL: two instances (two pools, as two replicas) acting on the same
// report at once record the leak, its audit record and its event once.

let db: TestDatabase;
let secondPool: Sql;
const closers: (() => Promise<unknown>)[] = [];

function instance(sql: Sql) {
  const bus = new MemoryBus();
  const log = createLogger("keys", "silent");
  const sink = keepingEventSink();
  const deps: KeysDeps = createKeysDeps({
    sql,
    bus,
    log,
    clock: new TestClock(Date.UTC(2026, 0, 1)),
    events: sink,
    ...inProcessServices({ sql, bus, log }),
  });
  closers.push(() => deps.close());
  const client = createClient(KeysService, createRouterTransport(keysRoutes(deps)));
  const leaked = () =>
    sink.kept
      .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
      .map((e) => fromBinary(DomainEventSchema, e.bytes))
      .filter((e) => e.type === "key.leaked");
  return { deps, client, leaked };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  secondPool = connect(db.url, { max: 10 });
  for (const ws of ["ws_a", "ws_b"]) {
    await db.sql`INSERT INTO workspaces (id, name, created_at) VALUES (${ws}, ${ws}, 0)`;
  }
});
afterAll(async () => {
  for (const close of closers) await close();
  await secondPool?.end({ timeout: 5 });
  await db?.drop();
});

describe("leak reports on PostgreSQL", () => {
  it("act once on a key two replicas are told of at the same moment, in every workspace holding it", async () => {
    const one = instance(db.sql);
    const two = instance(secondPool);
    const a = await one.client.createApi({ caller: callerOf("ws_a", "*"), name: "a", keyFormat: "checksum" });
    const b = await one.client.createApi({ caller: callerOf("ws_b", "*"), name: "b", leakPolicy: "flag" });
    const { key, keyId } = await one.client.createKey({ caller: callerOf("ws_a", "*"), apiId: a.apiId });
    const imported = await one.client.migrateKeys({
      caller: callerOf("ws_b", "*"),
      migrationId: "m",
      apiId: b.apiId,
      keys: [{ hash: hashKey(key) }],
    });
    expect(imported.failed).toEqual([]);
    const hash = hashKey(key);
    const reports = await Promise.all(
      Array.from({ length: 8 }, (_, i) => leakReported((i % 2 ? one : two).deps, hash, "report", "")),
    );
    for (const targets of reports) expect(targets).toHaveLength(2);
    const events = [...one.leaked(), ...two.leaked()];
    expect(events.map((e) => [e.workspaceId, JSON.parse(e.dataJson).action]).sort()).toEqual([
      ["ws_a", "revoked"],
      ["ws_b", "flagged"],
    ]);
    const audit = await db.sql<{ workspace_id: string; actor_type: string; fields: string[] }[]>`
      SELECT workspace_id, actor_type, fields FROM keys_audit_log WHERE operation = 'keys.reportLeak'
      ORDER BY workspace_id`;
    expect(audit.map((r) => ({ ...r }))).toEqual([
      { workspace_id: "ws_a", actor_type: "system", fields: ["revoked"] },
      { workspace_id: "ws_b", actor_type: "system", fields: ["flagged"] },
    ]);
    const rows = await db.sql<{ id: string; enabled: boolean; leaked: boolean }[]>`
      SELECT id, enabled, leaked_at IS NOT NULL AS leaked FROM keys ORDER BY workspace_id`;
    expect(rows.map((r) => ({ ...r }))).toEqual([
      { id: keyId, enabled: false, leaked: true },
      { id: expect.any(String), enabled: true, leaked: true },
    ]);
    const verifyA = await two.client.verifyKey({ caller: callerOf("ws_a", "*"), key });
    const verifyB = await two.client.verifyKey({ caller: callerOf("ws_b", "*"), key });
    expect([verifyA.code, verifyB.code]).toEqual([VerifyCode.DISABLED, VerifyCode.VALID]);
  });

  it("skips deleted keys and keys of deleted APIs", async () => {
    const one = instance(db.sql);
    const api = await one.client.createApi({ caller: callerOf("ws_a", "*"), name: "gone" });
    const { key, keyId } = await one.client.createKey({ caller: callerOf("ws_a", "*"), apiId: api.apiId });
    await one.client.deleteKey({ caller: callerOf("ws_a", "*"), keyId });
    expect(await leakReported(one.deps, hashKey(key), "github", "")).toEqual([]);
    const other = await one.client.createKey({ caller: callerOf("ws_a", "*"), apiId: api.apiId });
    await one.client.deleteApi({ caller: callerOf("ws_a", "*"), apiId: api.apiId });
    expect(await leakReported(one.deps, hashKey(other.key), "github", "")).toEqual([]);
    expect(one.leaked()).toEqual([]);
  });
});
