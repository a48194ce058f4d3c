import { createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, ErrorReason, hashKey, MemoryBus, migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../testing/in-memory-keys.ts";
import { keysDepsOverDatabase } from "../testing/keys-deps.ts";
import { createRootKey, createWorkspace, ensureRootKey, listRootKeys, revokeRootKey } from "./admin.ts";
import type { KeysDeps } from "./deps.ts";
import { keysMigrations } from "./migrations.ts";
import { keysRoutes } from "./routes.ts";

let db: TestDatabase;
let deps: KeysDeps;
const client = () => createClient(KeysService, createRouterTransport(keysRoutes(deps)));

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  // Applying the migrations again changes nothing.
  await migrate(db.sql, "keys", keysMigrations);
  deps = keysDepsOverDatabase(db.sql, new MemoryBus(), createLogger("keys", "silent"));
});
afterAll(async () => {
  deps?.close();
  await db?.drop();
});

describe("workspace and root-key administration", () => {
  it("creates a workspace with a root key holding * that authenticates as that workspace", async () => {
    const ws = await createWorkspace(db.sql, "acme");
    expect(ws.workspaceId).toMatch(/^ws_/);
    expect(ws.rootKey).toMatch(/^lk_root_[1-9A-HJ-NP-Za-km-z]{30,}$/);
    const { caller } = await client().authenticateRootKey({ hash: hashKey(ws.rootKey) });
    expect(caller).toMatchObject({
      workspaceId: ws.workspaceId,
      rootKeyId: ws.rootKeyId,
      permissions: ["*"],
    });
  });

  it("refuses a second workspace of the same name", async () => {
    await createWorkspace(db.sql, "dupe");
    await expect(createWorkspace(db.sql, "dupe")).rejects.toThrow("a workspace named 'dupe' already exists");
  });

  it("creates a root key in a workspace named by id or by name, default the default workspace", async () => {
    const ws = await createWorkspace(db.sql, "byname");
    const byName = await createRootKey(db.sql, { workspace: "byname", permissions: ["api.*.verify_key"] });
    const byId = await createRootKey(db.sql, { workspace: ws.workspaceId, permissions: ["apis.*.read_key"] });
    const byDefault = await createRootKey(db.sql, { permissions: ["ratelimit.*.limit"], name: "ci" });
    const auth = async (k: string) => (await client().authenticateRootKey({ hash: hashKey(k) })).caller;
    expect(await auth(byName.rootKey)).toMatchObject({
      workspaceId: ws.workspaceId,
      permissions: ["api.*.verify_key"],
    });
    expect((await auth(byId.rootKey))?.workspaceId).toBe(ws.workspaceId);
    expect(await auth(byDefault.rootKey)).toMatchObject({
      workspaceId: "ws_default",
      permissions: ["ratelimit.*.limit"],
    });
  });

  it("refuses an unknown workspace, naming it, and malformed permissions, naming them", async () => {
    await expect(createRootKey(db.sql, { workspace: "nowhere", permissions: ["*"] })).rejects.toThrow(
      "workspace 'nowhere' does not exist",
    );
    await expect(createRootKey(db.sql, { permissions: ["api.*.fly", "api.*.verify_key"] })).rejects.toThrow(
      "unknown action 'fly'",
    );
    await expect(createRootKey(db.sql, { permissions: [] })).rejects.toThrow("at least one permission");
  });

  it("lists root keys with their workspace and revokes them, after which they no longer authenticate", async () => {
    const ws = await createWorkspace(db.sql, "listed");
    const listed = (await listRootKeys(db.sql)).find((k) => k.id === ws.rootKeyId);
    expect(listed).toEqual({
      id: ws.rootKeyId,
      workspaceId: ws.workspaceId,
      workspaceName: "listed",
      start: ws.rootKey.slice(0, 12),
      permissions: ["*"],
      createdAt: expect.any(Number),
      revokedAt: null,
    });
    const { revokedAt } = await revokeRootKey(db.sql, ws.rootKeyId);
    expect((await revokeRootKey(db.sql, ws.rootKeyId)).revokedAt).toBe(revokedAt);
    expect((await listRootKeys(db.sql)).find((k) => k.id === ws.rootKeyId)?.revokedAt).toBe(revokedAt);
    expect((await rejection(client().authenticateRootKey({ hash: hashKey(ws.rootKey) }))).reason).toBe(
      ErrorReason.UNAUTHENTICATED,
    );
    await expect(revokeRootKey(db.sql, "rk_nope")).rejects.toThrow("root key 'rk_nope' does not exist");
  });

  it("makes a given string a root key holding * idempotently, and leaves it revoked once revoked", async () => {
    const plaintext = "lk_root_from_env_0123456789";
    const first = await ensureRootKey(db.sql, plaintext);
    const again = await ensureRootKey(db.sql, plaintext);
    expect(first.created).toBe(true);
    expect(again).toEqual({ rootKeyId: first.rootKeyId, created: false, revoked: false });
    expect((await listRootKeys(db.sql)).filter((k) => k.id === first.rootKeyId)).toHaveLength(1);
    const { caller } = await client().authenticateRootKey({ hash: hashKey(plaintext) });
    expect(caller).toMatchObject({
      workspaceId: "ws_default",
      rootKeyId: first.rootKeyId,
      permissions: ["*"],
    });

    const revoked = await revokeRootKey(db.sql, first.rootKeyId);
    expect(revoked).toEqual({
      revokedAt: expect.any(Number),
      hash: hashKey(plaintext),
      workspaceId: "ws_default",
    });
    // A restart with the same LATCHKEY_ROOT_KEY: it stays revoked, and says so.
    expect(await ensureRootKey(db.sql, plaintext)).toEqual({
      rootKeyId: first.rootKeyId,
      created: false,
      revoked: true,
    });
    expect((await listRootKeys(db.sql)).find((k) => k.id === first.rootKeyId)?.revokedAt).toBe(
      revoked.revokedAt,
    );
    expect((await rejection(client().authenticateRootKey({ hash: hashKey(plaintext) }))).reason).toBe(
      ErrorReason.UNAUTHENTICATED,
    );
  });

  it("audits creating the key and restoring it to * as cli.createRootKey, in the change's transaction, and writes nothing when nothing changed", async () => {
    const plaintext = "lk_root_audited_0123456789";
    const records = async (rootKeyId: string) =>
      (
        await db.sql<{ operation: string; actor_id: string; resources: unknown; fields: string[] }[]>`
          SELECT operation, actor_id, resources, fields FROM keys_audit_log
          WHERE resource_ids @> ARRAY[${rootKeyId}::text] ORDER BY time, id`
      ).map((r) => [r.operation, r.actor_id, r.resources, r.fields]);
    const first = await ensureRootKey(db.sql, plaintext);
    await ensureRootKey(db.sql, plaintext);
    const created = [
      "cli.createRootKey",
      "cli",
      [{ type: "root_key", id: first.rootKeyId }],
      ["permissions", "name"],
    ];
    expect(await records(first.rootKeyId)).toEqual([created]);
    await db.sql`UPDATE root_keys SET permissions = ARRAY['api.*.read_api'] WHERE id = ${first.rootKeyId}`;
    expect(await ensureRootKey(db.sql, plaintext)).toEqual({
      rootKeyId: first.rootKeyId,
      created: false,
      revoked: false,
    });
    await ensureRootKey(db.sql, plaintext);
    expect(await records(first.rootKeyId)).toEqual([
      created,
      ["cli.createRootKey", "cli", [{ type: "root_key", id: first.rootKeyId }], ["permissions"]],
    ]);
    const text = JSON.stringify(await db.sql`SELECT * FROM keys_audit_log`);
    expect(text).not.toContain(plaintext);
    expect(text).not.toContain(hashKey(plaintext));
  });

  it("refuses a string the gateway would never take for a root key: longer than 256, or not visible ASCII", async () => {
    const message = "LATCHKEY_ROOT_KEY must be at most 256 characters of visible ASCII (no spaces)";
    await expect(ensureRootKey(db.sql, "x".repeat(257))).rejects.toThrow(message);
    await expect(ensureRootKey(db.sql, "lk_root_with a_space")).rejects.toThrow(message);
    await expect(ensureRootKey(db.sql, "lk_root_\u00e9t\u00e9_0123456")).rejects.toThrow(message);
  });
});
