import { randomBytes } from "node:crypto";
import { analyticsRoutes, createMemoryAnalyticsDeps } from "@latchkey/analytics";
import { createGateway, listen } from "@latchkey/gateway";
import {
  createIdentityDeps,
  IDENTITY_AUDIT_TABLE,
  identityMigrations,
  identityRoutes,
} from "@latchkey/identity";
import {
  createKeysDeps,
  createRootKey,
  createWorkspace,
  KEYS_AUDIT_TABLE,
  keysMigrations,
  keysRoutes,
  revokeRootKey,
} from "@latchkey/keys";
import { createPortalDeps, portalMigrations, portalRoutes } from "@latchkey/portal";
import type { DomainEvent } from "@latchkey/proto/common/v1/common_pb";
import {
  createRatelimitDeps,
  RATELIMIT_AUDIT_TABLE,
  ratelimitMigrations,
  ratelimitRoutes,
} from "@latchkey/ratelimit";
import {
  AuditPruner,
  type AuditRecord,
  auditSuccess,
  createLogger,
  DOMAIN_EVENT_SUBJECT,
  insertAudit,
  localTransport,
  MemoryBus,
  migrate,
  systemClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import {
  createWebhookDeps,
  WEBHOOKS_AUDIT_TABLE,
  type WebhookDeps,
  webhookMigrations,
  webhookRoutes,
} from "@latchkey/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The audit log end to end in one process: the gateway over the real keys, identity, ratelimit and
 * webhooks services on a real PostgreSQL, each management operation sent through the gateway's HTTP server.
 */

const silent = (name: string) => createLogger(name, "silent");

let db: TestDatabase;
let server: Awaited<ReturnType<typeof listen>>;
const events = keepingEventSink();
let a: { workspaceId: string; rootKeyId: string; rootKey: string };
let b: { workspaceId: string; rootKeyId: string; rootKey: string };
let closeKeys: () => Promise<void>;
let closeRatelimit: () => Promise<void>;
let webhooks: WebhookDeps;

type Json = any;

async function post(
  operation: string,
  body: unknown,
  key = a.rootKey,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** Every record the root key may list, newest first, page by page (`limit` per page). */
async function everything(key: string, filters: Record<string, unknown> = {}, limit = 100): Promise<Json[]> {
  const all: Json[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const res = await post("auditLogs.list", { ...filters, limit, ...(cursor ? { cursor } : {}) }, key);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    all.push(...res.body.data);
    if (!res.body.pagination.hasMore) return all;
    cursor = res.body.pagination.cursor;
  }
  throw new Error("more than 100 pages");
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  await migrate(db.sql, "identity", identityMigrations);
  await migrate(db.sql, "ratelimit", ratelimitMigrations);
  await migrate(db.sql, "webhooks", webhookMigrations);
  await migrate(db.sql, "portal", portalMigrations);
  const bus = new MemoryBus();
  const identity = localTransport(
    identityRoutes(createIdentityDeps({ sql: db.sql, bus, events, log: silent("identity") })),
  );
  const ratelimitDeps = createRatelimitDeps({ sql: db.sql, bus, log: silent("ratelimit") });
  closeRatelimit = () => ratelimitDeps.close();
  const ratelimit = localTransport(ratelimitRoutes(ratelimitDeps));
  const keysDeps = createKeysDeps({ sql: db.sql, bus, events, log: silent("keys"), identity, ratelimit });
  closeKeys = () => keysDeps.close();
  webhooks = createWebhookDeps({ sql: db.sql, encryptionKey: randomBytes(32), log: silent("webhooks") });
  const keysTransport = localTransport(keysRoutes(keysDeps));
  const analytics = localTransport(analyticsRoutes(createMemoryAnalyticsDeps({ log: silent("analytics") })));
  const gateway = createGateway({
    keys: keysTransport,
    identity,
    ratelimit,
    analytics,
    // No delivery worker: the deliveries redelivered here are put in by intake, and never sent.
    webhooks: localTransport(webhookRoutes(webhooks)),
    portal: localTransport(
      portalRoutes(createPortalDeps({ sql: db.sql, keys: keysTransport, analytics, log: silent("portal") })),
    ),
    log: silent("gateway"),
    clock: systemClock,
    bus,
  });
  server = await listen(gateway, 0, "127.0.0.1");
  a = await createWorkspace(db.sql, "audit-a");
  b = await createWorkspace(db.sql, "audit-b");
});

afterAll(async () => {
  await server?.close();
  await closeKeys?.();
  await closeRatelimit?.();
  await db?.drop();
});

interface Expected {
  operation: string;
  /** The answer's meta.requestId. */
  requestId: string;
  resources: { type: string; id: string }[];
  fields: string[];
}

describe("the audit log of every management operation, through the gateway over the real services", () => {
  const expected: Expected[] = [];
  const secrets: string[] = [];
  let keyId = "";
  let apiId = "";
  let webhookId = "";

  /** Sends `operation`, expects 200 and the record it must leave. */
  async function change(
    operation: string,
    body: unknown,
    audit: {
      operation?: string;
      resources: (data: Json) => { type: string; id: string }[];
      fields: string[];
    },
  ): Promise<Json> {
    const res = await post(operation, body);
    expect(res.status, `${operation}: ${JSON.stringify(res.body)}`).toBe(200);
    expected.push({
      operation: audit.operation ?? operation,
      requestId: res.body.meta.requestId,
      resources: audit.resources(res.body.data),
      fields: audit.fields,
    });
    return res.body.data;
  }

  it("leaves exactly one record per operation, with its actor, operation, resources, requestId and field names", async () => {
    const marker = events.kept.length;
    apiId = (
      await change(
        "apis.createApi",
        { name: "payments" },
        { resources: (d) => [{ type: "api", id: d.apiId }], fields: ["name"] },
      )
    ).apiId;
    const permission = await change(
      "permissions.createPermission",
      { name: "Read docs", slug: "docs.read", description: "reads" },
      {
        resources: (d) => [{ type: "permission", id: d.permissionId }],
        fields: ["name", "slug", "description"],
      },
    );
    await post("permissions.createPermission", { name: "Write docs", slug: "docs.write" });
    expected.push({
      operation: "permissions.createPermission",
      requestId: "(unchecked)",
      resources: [],
      fields: [],
    });
    const role = await change(
      "permissions.createRole",
      { name: "reader", permissions: ["docs.read"] },
      { resources: (d) => [{ type: "role", id: d.roleId }], fields: ["name", "permissions"] },
    );
    await change(
      "permissions.setRolePermissions",
      { roleId: role.roleId, permissions: ["docs.read", "docs.write"] },
      { resources: () => [{ type: "role", id: role.roleId }], fields: ["permissions"] },
    );
    const identity = await change(
      "identities.createIdentity",
      { externalId: "user_1", meta: { token: "meta-secret-identity" } },
      { resources: (d) => [{ type: "identity", id: d.identityId }], fields: ["externalId", "meta"] },
    );
    secrets.push("meta-secret-identity");
    await change(
      "identities.updateIdentity",
      { identity: "user_1", meta: { token: "meta-secret-identity-2" } },
      { resources: () => [{ type: "identity", id: identity.identityId }], fields: ["meta"] },
    );
    secrets.push("meta-secret-identity-2");

    const eventsBeforeKey = events.kept.length;
    const created = await change(
      "keys.createKey",
      {
        apiId,
        name: "acme",
        meta: { token: "meta-secret-key" },
        externalId: "user_2",
        credits: { remaining: 10 },
      },
      {
        resources: (d) => [
          { type: "key", id: d.keyId },
          { type: "api", id: apiId },
        ],
        fields: ["name", "externalId", "meta", "credits"],
      },
    );
    keyId = created.keyId;
    secrets.push(created.key, "meta-secret-key");
    // createKey made user_2's identity on the way: its record names it too.
    const implicit = domainEvents(eventsBeforeKey).find((e) => e.type === "identity.created");
    expect(implicit).toBeDefined();
    const implicitId = JSON.parse(implicit!.dataJson).identityId;
    expected.at(-1)!.resources.push({ type: "identity", id: implicitId });

    const key = (d: Json = {}, id = keyId) => [
      { type: "key", id: d.keyId ?? id },
      { type: "api", id: apiId },
    ];
    await change(
      "keys.updateKey",
      { keyId, name: "renamed", enabled: false, meta: { token: "meta-secret-key-2" } },
      { resources: () => key(), fields: ["name", "meta", "enabled"] },
    );
    secrets.push("meta-secret-key-2");
    await change(
      "keys.updateCredits",
      { keyId, operation: "increment", value: 5 },
      { resources: () => key(), fields: ["credits.remaining"] },
    );
    await change(
      "keys.addPermissions",
      { keyId, permissions: ["docs.read"] },
      { resources: () => key(), fields: ["permissions"] },
    );
    await change(
      "keys.removePermissions",
      { keyId, permissions: ["docs.read"] },
      { resources: () => key(), fields: ["permissions"] },
    );
    await change(
      "keys.setPermissions",
      { keyId, permissions: ["docs.write"] },
      { resources: () => key(), fields: ["permissions"] },
    );
    await change(
      "keys.addRoles",
      { keyId, roles: ["reader"] },
      { resources: () => key(), fields: ["roles"] },
    );
    await change(
      "keys.removeRoles",
      { keyId, roles: ["reader"] },
      { resources: () => key(), fields: ["roles"] },
    );
    await change(
      "keys.setRoles",
      { keyId, roles: ["reader"] },
      { resources: () => key(), fields: ["roles"] },
    );
    const rerolled = await change(
      "keys.rerollKey",
      { keyId, expiration: 0 },
      {
        resources: (d) => [
          { type: "key", id: keyId },
          { type: "key", id: d.keyId },
          { type: "api", id: apiId },
        ],
        fields: ["expiration"],
      },
    );
    secrets.push(rerolled.key);
    const migrated = await change(
      "keys.migrateKeys",
      {
        migrationId: "mig1",
        apiId,
        keys: [
          { hash: "LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=", meta: { token: "meta-secret-migrated" } },
        ],
      },
      {
        resources: (d) => [
          { type: "api", id: apiId },
          { type: "key", id: d.migrated[0].keyId },
        ],
        fields: ["keys"],
      },
    );
    secrets.push("meta-secret-migrated");
    expect(migrated.migrated).toHaveLength(1);

    // The namespace is made by a limit (the hot path, not audited), then overridden.
    expect(
      (await post("ratelimits.limit", { namespace: "sms", identifier: "u", limit: 5, duration: 60_000 }))
        .status,
    ).toBe(200);
    const override = await change(
      "ratelimits.setOverride",
      { namespace: "sms", identifier: "user_1", limit: 1, duration: 60_000 },
      {
        operation: "ratelimit.setOverride",
        resources: (d) => [
          { type: "override", id: d.overrideId },
          { type: "namespace", id: expect.stringMatching(/^rlns_/) as unknown as string },
        ],
        fields: ["identifier", "limit", "duration"],
      },
    );
    await change(
      "ratelimit.deleteOverride",
      { namespace: "sms", identifier: "user_1" },
      {
        resources: () => [
          { type: "override", id: override.overrideId },
          { type: "namespace", id: expect.stringMatching(/^rlns_/) as unknown as string },
        ],
        fields: [],
      },
    );

    // Webhooks: the URL (with a token in its query), the description and the signing secret are values, never recorded.
    const hook = await change(
      "webhooks.create",
      {
        url: "https://hooks.example.com/latchkey?token=url-secret-token",
        events: ["key.created"],
        description: "billing sync",
      },
      { resources: (d) => [{ type: "webhook", id: d.webhookId }], fields: ["url", "events", "description"] },
    );
    webhookId = hook.webhookId;
    expect(hook.secret).toMatch(/^whsec_/);
    secrets.push(hook.secret, "url-secret-token", "hooks.example.com", "billing sync");
    await change(
      "webhooks.update",
      { webhookId, url: "https://hooks.example.org/v2?token=url-secret-token-2", enabled: false },
      { resources: () => [{ type: "webhook", id: webhookId }], fields: ["url", "enabled"] },
    );
    secrets.push("url-secret-token-2", "hooks.example.org");
    // A delivery to redeliver, as intake writes one (no worker runs here).
    expect(
      await webhooks.store.intake(
        [
          {
            id: "evt_audit_1",
            type: "key.created",
            workspaceId: a.workspaceId,
            occurredAt: 1,
            dataJson: "{}",
          },
        ],
        Date.now(),
      ),
    ).toBe(0); // disabled: not taken
    await change(
      "webhooks.update",
      { webhookId, enabled: true },
      { resources: () => [{ type: "webhook", id: webhookId }], fields: ["enabled"] },
    );
    expect(
      await webhooks.store.intake(
        [
          {
            id: "evt_audit_2",
            type: "key.created",
            workspaceId: a.workspaceId,
            occurredAt: 1,
            dataJson: "{}",
          },
        ],
        Date.now(),
      ),
    ).toBe(1);
    const [delivery] = await webhooks.store.listDeliveries(a.workspaceId, webhookId, {
      limit: 1,
      after: undefined,
    });
    await change(
      "webhooks.redeliver",
      { webhookId, deliveryId: delivery!.id },
      {
        resources: (d) => [
          { type: "webhook", id: webhookId },
          { type: "delivery", id: delivery!.id },
          { type: "delivery", id: d.deliveryId },
        ],
        fields: [],
      },
    );
    await change(
      "webhooks.delete",
      { webhookId },
      { resources: () => [{ type: "webhook", id: webhookId }], fields: [] },
    );

    await change(
      "keys.deleteKey",
      { keyId: rerolled.keyId },
      { resources: (d) => key(d, rerolled.keyId), fields: [] },
    );
    await change(
      "permissions.deleteRole",
      { role: "reader" },
      { resources: () => [{ type: "role", id: role.roleId }], fields: [] },
    );
    await change(
      "permissions.deletePermission",
      { permission: "docs.write" },
      {
        resources: () => [{ type: "permission", id: expect.stringMatching(/^perm_/) as unknown as string }],
        fields: [],
      },
    );
    await change(
      "identities.deleteIdentity",
      { identity: "user_1" },
      { resources: () => [{ type: "identity", id: identity.identityId }], fields: [] },
    );
    await change("apis.deleteApi", { apiId }, { resources: () => [{ type: "api", id: apiId }], fields: [] });

    const records = await everything(a.rootKey);
    const byRoot = records.filter((r) => r.actor.type === "root_key");
    const checked = expected.filter((e) => e.requestId !== "(unchecked)");
    expect(checked).toHaveLength(29);
    expect(byRoot).toHaveLength(expected.length);
    for (const e of checked) {
      const mine = records.filter((r) => r.requestId === e.requestId);
      expect(mine, e.operation).toHaveLength(1);
      expect(mine[0], e.operation).toEqual({
        auditLogId: expect.stringMatching(/^audit_/),
        time: expect.any(Number),
        actor: { type: "root_key", id: a.rootKeyId },
        operation: e.operation,
        resources: e.resources,
        outcome: "success",
        error: null,
        requestId: e.requestId,
        fields: e.fields,
      });
    }
    expect(permission.permissionId).toMatch(/^perm_/);
    // Never key material, root keys or meta values, anywhere in a record.
    const text = JSON.stringify(records);
    for (const secret of [...secrets, a.rootKey]) expect(text).not.toContain(secret);
    expect(text).not.toContain("LCa0a2j");
    expect(domainEvents(marker).length).toBeGreaterThan(0);
  });

  it("publishes each change's DomainEvent once it is committed, ids only", async () => {
    const types = domainEvents(0)
      .filter((e) => e.workspaceId === a.workspaceId)
      .map((e) => e.type);
    expect(types).toEqual([
      "identity.created", // identities.createIdentity
      "identity.created", // createKey's user_2
      "key.created",
      "key.updated", // updateKey
      "key.updated", // updateCredits
      "key.updated", // addPermissions
      "key.updated", // removePermissions
      "key.updated", // setPermissions
      "key.updated", // addRoles
      "key.updated", // removeRoles
      "key.updated", // setRoles
      "key.rerolled",
      "key.created", // migrateKeys
      "key.deleted",
      "identity.deleted",
    ]);
    const text = JSON.stringify(domainEvents(0).map((e) => e.dataJson));
    for (const secret of secrets) expect(text).not.toContain(secret);
  });

  it("records a refused operation once, as a failure with its error code, and publishes nothing", async () => {
    const before = events.kept.length;
    const missing = await post("keys.updateKey", { keyId: "key_2cGKbMxRjGzhCxo1", name: "x" });
    expect(missing.status).toBe(404);
    const taken = await post("identities.createIdentity", { externalId: "user_2" });
    expect(taken.status).toBe(409);
    const noOverride = await post("ratelimits.deleteOverride", { namespace: "sms", identifier: "nobody" });
    expect(noOverride.status).toBe(404);
    // The webhook deleted above is gone: updating it is refused.
    const noWebhook = await post("webhooks.update", { webhookId, enabled: true });
    expect(noWebhook.status).toBe(404);
    expect(events.kept.length).toBe(before);

    const failures = await everything(a.rootKey, { outcome: "failure" });
    const byRequest = (id: string) => failures.filter((r) => r.requestId === id);
    expect(byRequest(missing.body.meta.requestId)).toEqual([
      expect.objectContaining({
        operation: "keys.updateKey",
        actor: { type: "root_key", id: a.rootKeyId },
        resources: [{ type: "key", id: "key_2cGKbMxRjGzhCxo1" }],
        outcome: "failure",
        error: { code: "KEY_NOT_FOUND" },
        fields: [],
      }),
    ]);
    expect(byRequest(taken.body.meta.requestId)).toEqual([
      expect.objectContaining({
        operation: "identities.createIdentity",
        outcome: "failure",
        error: { code: "IDENTITY_ALREADY_EXISTS" },
      }),
    ]);
    expect(byRequest(noOverride.body.meta.requestId)).toEqual([
      expect.objectContaining({
        operation: "ratelimit.deleteOverride",
        resources: [{ type: "namespace", id: "" }],
        outcome: "failure",
        error: { code: "OVERRIDE_NOT_FOUND" },
      }),
    ]);
    expect(byRequest(noWebhook.body.meta.requestId)).toEqual([
      expect.objectContaining({
        operation: "webhooks.update",
        actor: { type: "root_key", id: a.rootKeyId },
        resources: [{ type: "webhook", id: webhookId }],
        outcome: "failure",
        error: { code: "WEBHOOK_NOT_FOUND" },
        fields: [],
      }),
    ]);
    expect(failures).toHaveLength(4);
    // None of them left a success record.
    const all = await everything(a.rootKey);
    for (const id of [missing, taken, noOverride, noWebhook].map((r) => r.body.meta.requestId)) {
      expect(all.filter((r) => r.requestId === id)).toHaveLength(1);
    }
  });

  it("records the CLI's changes with actor cli", async () => {
    const limited = await createRootKey(db.sql, { workspace: "audit-a", permissions: ["api.*.read_api"] });
    await revokeRootKey(db.sql, limited.rootKeyId);
    await revokeRootKey(db.sql, limited.rootKeyId);
    const cli = await everything(a.rootKey, { actorId: "cli" });
    expect(cli.map((r) => [r.operation, r.resources, r.fields, r.requestId])).toEqual([
      ["cli.revokeRootKey", [{ type: "root_key", id: limited.rootKeyId }], ["revokedAt"], ""],
      ["cli.createRootKey", [{ type: "root_key", id: limited.rootKeyId }], ["permissions"], ""],
      [
        "cli.createWorkspace",
        [
          { type: "workspace", id: a.workspaceId },
          { type: "root_key", id: a.rootKeyId },
        ],
        ["name"],
        "",
      ],
    ]);
    expect(cli.every((r) => r.actor.type === "cli" && r.actor.id === "cli")).toBe(true);
    expect(JSON.stringify(cli)).not.toContain(limited.rootKey);
  });

  it("pages newest first across the four contexts' records with an opaque cursor, each record once", async () => {
    const whole = await everything(a.rootKey);
    const paged = await everything(a.rootKey, {}, 3);
    expect(paged.map((r) => r.auditLogId)).toEqual(whole.map((r) => r.auditLogId));
    expect(new Set(paged.map((r) => r.auditLogId)).size).toBe(paged.length);
    for (let i = 1; i < whole.length; i++) {
      const [prev, cur] = [whole[i - 1], whole[i]];
      expect(prev.time > cur.time || (prev.time === cur.time && prev.auditLogId > cur.auditLogId)).toBe(true);
    }
    const contexts = new Set(whole.map((r) => r.operation.split(".")[0]));
    for (const c of ["apis", "keys", "permissions", "identities", "ratelimit", "webhooks", "cli"])
      expect(contexts).toContain(c);

    const first = await post("auditLogs.list", { limit: 2 });
    expect(first.body.data).toHaveLength(2);
    expect(first.body.pagination).toEqual({
      cursor: expect.stringMatching(/^[A-Za-z0-9_-]+$/),
      hasMore: true,
    });
    const last = await post("auditLogs.list", { limit: 100, cursor: first.body.pagination.cursor });
    expect(last.body.data.map((r: Json) => r.auditLogId)).toEqual(whole.slice(2).map((r) => r.auditLogId));
    expect(last.body.pagination).toEqual({ hasMore: false });
  });

  it("filters by actor, resource, operation, outcome and time", async () => {
    const whole = await everything(a.rootKey);
    const byKey = await everything(a.rootKey, { resourceId: keyId });
    expect(byKey.map((r) => r.auditLogId)).toEqual(
      whole.filter((r) => r.resources.some((x: Json) => x.id === keyId)).map((r) => r.auditLogId),
    );
    expect(byKey.map((r) => r.operation)).toContain("keys.createKey");
    expect(byKey.map((r) => r.operation)).toContain("keys.rerollKey");
    const byApi = await everything(a.rootKey, { resourceId: apiId, operation: "keys.createKey" });
    expect(byApi.map((r) => r.operation)).toEqual(["keys.createKey"]);
    expect((await everything(a.rootKey, { actorId: a.rootKeyId })).length).toBe(
      whole.filter((r) => r.actor.id === a.rootKeyId).length,
    );
    expect((await everything(a.rootKey, { outcome: "success" })).every((r) => r.outcome === "success")).toBe(
      true,
    );
    const times = whole.map((r) => r.time).sort((x, y) => x - y);
    const mid = times[Math.floor(times.length / 2)]!;
    const older = await everything(a.rootKey, { end: mid });
    const newer = await everything(a.rootKey, { start: mid });
    expect(older.every((r) => r.time < mid)).toBe(true);
    expect(newer.every((r) => r.time >= mid)).toBe(true);
    expect(older.length + newer.length).toBe(whole.length);
  });

  it("shows one workspace's log to no other: B lists nothing of A, even by A's ids", async () => {
    expect(await everything(b.rootKey)).toEqual([
      expect.objectContaining({
        operation: "cli.createWorkspace",
        resources: expect.arrayContaining([{ type: "workspace", id: b.workspaceId }]),
      }),
    ]);
    for (const resourceId of [keyId, apiId, webhookId, a.rootKeyId, a.workspaceId]) {
      expect(await everything(b.rootKey, { resourceId })).toEqual([]);
    }
    expect(await everything(b.rootKey, { actorId: a.rootKeyId })).toEqual([]);
    expect(await everything(b.rootKey, { operation: "webhooks.create" })).toEqual([]);
    // A's cursor, handed to B, pages B's own records only.
    const first = await post("auditLogs.list", { limit: 1 });
    const res = await post("auditLogs.list", { cursor: first.body.pagination.cursor }, b.rootKey);
    expect(res.status).toBe(200);
    expect(res.body.data.every((r: Json) => !JSON.stringify(r).includes(a.workspaceId))).toBe(true);
  });

  it("answers 400 saying what to pass for a cursor it did not give, and for an end not after start", async () => {
    for (const cursor of ["nope!", Buffer.from("12.ok.extra!").toString("base64url"), "eA"]) {
      const res = await post("auditLogs.list", { cursor });
      expect(res.status, cursor).toBe(400);
      expect(res.body.error.errors).toEqual([
        expect.objectContaining({
          location: "/body/cursor",
          fix: "Pass pagination.cursor of the previous answer unchanged, or omit cursor to start from the newest record.",
        }),
      ]);
    }
    const res = await post("auditLogs.list", { start: 10, end: 10 });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location: "/body/end" })]);
  });

  it("answers 403 to a root key without audit.*.read", async () => {
    const limited = await createRootKey(db.sql, { workspace: "audit-a", permissions: ["api.*.read_api"] });
    const res = await post("auditLogs.list", {}, limited.rootKey);
    expect(res.status).toBe(403);
    expect(res.body.error.detail).toContain("audit.*.read");
    const reader = await createRootKey(db.sql, { workspace: "audit-a", permissions: ["audit.*.read"] });
    expect((await post("auditLogs.list", {}, reader.rootKey)).status).toBe(200);
  });
});

describe("the same transaction: a change whose audit record cannot be written does not happen", () => {
  async function failingInserts(table: string, run: () => Promise<void>) {
    await db.sql.unsafe(`CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'audit insert refused by the test'; END $$`);
    await db.sql.unsafe(
      `CREATE TRIGGER refuse BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_audit()`,
    );
    try {
      await run();
    } finally {
      await db.sql.unsafe(`DROP TRIGGER refuse ON ${table}`);
      await db.sql.unsafe("DROP FUNCTION refuse_audit()");
    }
  }

  it("rolls back an API, an identity, an override, a webhook and a CLI root key whose record fails", async () => {
    const before = events.kept.length;
    await failingInserts(KEYS_AUDIT_TABLE, async () => {
      expect((await post("apis.createApi", { name: "doomed" })).status).toBe(500);
      await expect(
        createRootKey(db.sql, { workspace: "audit-a", permissions: ["*"], name: "doomed" }),
      ).rejects.toThrow(/audit insert refused/);
    });
    expect(await db.sql`SELECT id FROM apis WHERE name = 'doomed'`).toEqual([]);
    expect(await db.sql`SELECT id FROM root_keys WHERE name = 'doomed'`).toEqual([]);

    await failingInserts(IDENTITY_AUDIT_TABLE, async () => {
      expect((await post("identities.createIdentity", { externalId: "doomed" })).status).toBe(500);
    });
    expect(await db.sql`SELECT id FROM identities WHERE external_id = 'doomed'`).toEqual([]);

    await failingInserts(RATELIMIT_AUDIT_TABLE, async () => {
      const res = await post("ratelimits.setOverride", {
        namespace: "sms",
        identifier: "doomed",
        limit: 1,
        duration: 1000,
      });
      expect(res.status).toBe(500);
    });
    expect(await db.sql`SELECT id FROM ratelimit_overrides WHERE identifier = 'doomed'`).toEqual([]);

    const hook = await post("webhooks.create", {
      url: "https://hooks.example.com/kept",
      events: ["key.created"],
      description: "kept",
    });
    expect(hook.status).toBe(200);
    await failingInserts(WEBHOOKS_AUDIT_TABLE, async () => {
      const res = await post("webhooks.create", {
        url: "https://hooks.example.com/doomed",
        events: ["key.created"],
        description: "doomed",
      });
      expect(res.status).toBe(500);
      expect(
        (await post("webhooks.update", { webhookId: hook.body.data.webhookId, description: "changed" }))
          .status,
      ).toBe(500);
      expect((await post("webhooks.delete", { webhookId: hook.body.data.webhookId })).status).toBe(500);
    });
    expect(await db.sql`SELECT id FROM webhooks WHERE description = 'doomed'`).toEqual([]);
    expect(await db.sql`SELECT description FROM webhooks WHERE id = ${hook.body.data.webhookId}`).toEqual([
      { description: "kept" },
    ]);
    // Nothing was told of changes that did not happen.
    expect(events.kept.length).toBe(before);
  });

  it("keeps a record only with its change: each change present has its record", async () => {
    const apis = await db.sql<{ id: string }[]>`SELECT id FROM apis WHERE workspace_id = ${a.workspaceId}`;
    for (const { id } of apis) {
      const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM keys_audit_log
        WHERE operation = 'apis.createApi' AND ${id} = ANY (resource_ids)`;
      expect(row!.n, id).toBe(1);
    }
    const hooks = await db.sql<
      { id: string }[]
    >`SELECT id FROM webhooks WHERE workspace_id = ${a.workspaceId}`;
    expect(hooks.length).toBeGreaterThan(0);
    for (const { id } of hooks) {
      const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhooks_audit_log
        WHERE operation = 'webhooks.create' AND outcome = 'success' AND ${id} = ANY (resource_ids)`;
      expect(row!.n, id).toBe(1);
    }
  });
});

describe("retention", () => {
  it("deletes, in batches, only the records older than AUDIT_RETENTION_DAYS", async () => {
    const now = Date.now();
    const day = 86_400_000;
    const record = (time: number): AuditRecord =>
      auditSuccess("cli", "ws_retention", "cli.createRootKey", [{ type: "root_key", id: "rk_x" }], [], time);
    const times = [now - 40 * day, now - 31 * day, now - 30 * day - 1, now - 30 * day, now - 29 * day, now];
    for (const t of times) await insertAudit(db.sql, RATELIMIT_AUDIT_TABLE, record(t));
    const pruner = new AuditPruner(db.sql, RATELIMIT_AUDIT_TABLE, { retentionDays: 30, batch: 2 });
    expect(await pruner.prune(now)).toBe(3);
    const left = await db.sql<{ time: number }[]>`SELECT time FROM ratelimit_audit_log
      WHERE workspace_id = 'ws_retention' ORDER BY time`;
    expect(left.map((r) => r.time)).toEqual([now - 30 * day, now - 29 * day, now]);
    // Other workspaces' recent records are untouched.
    expect((await everything(a.rootKey)).length).toBeGreaterThan(20);
    await pruner.stop();
  });

  it("runs in the background once started, and stops", async () => {
    await insertAudit(
      db.sql,
      IDENTITY_AUDIT_TABLE,
      auditSuccess("cli", "ws_retention", "cli.createRootKey", [], [], Date.now() - 400 * 86_400_000),
    );
    const pruner = new AuditPruner(db.sql, IDENTITY_AUDIT_TABLE, {
      retentionDays: 365,
      intervalMs: 50,
    }).start();
    for (let i = 0; i < 100; i++) {
      const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM identity_audit_log
        WHERE workspace_id = 'ws_retention'`;
      if (row!.n === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM identity_audit_log
      WHERE workspace_id = 'ws_retention'`;
    expect(row!.n).toBe(0);
    await pruner.stop();
  });
});

function domainEvents(from: number): DomainEvent[] {
  return events.kept
    .slice(from)
    .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
    .map((e) => e.message as DomainEvent);
}
