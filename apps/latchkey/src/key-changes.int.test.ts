import { fromBinary } from "@bufbuild/protobuf";
import { createRootKey, KEY_CHANGED } from "@latchkey/keys";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { createLogger, hashKey, MemoryBus, NatsBus } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { migrateAll } from "./database.ts";
import { KEY_CHANGES_CHANNEL, relayKeyChanges, revokeAndAnnounce } from "./key-changes.ts";

const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
const log = createLogger("key-changes-test", "silent");
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrateAll(db.sql);
});
afterAll(async () => {
  await db?.drop();
});

const decoded = (data: Uint8Array) => {
  const m = fromBinary(KeyChangedSchema, data);
  return { workspaceId: m.workspaceId, keyId: m.keyId, hash: m.hash };
};

describe("root-key revocations announced to the gateways' caches", () => {
  it("reach a npm start's bus through the database once committed, and not when the revocation fails", async () => {
    const bus = new MemoryBus();
    const heard: ReturnType<typeof decoded>[] = [];
    bus.subscribe(KEY_CHANGED, (data) => heard.push(decoded(data)));
    const stop = await relayKeyChanges(db.sql, bus, log);
    try {
      const { rootKeyId, rootKey } = await createRootKey(db.sql, { permissions: ["*"] });
      await expect(revokeAndAnnounce(db.sql, "rk_nope", { natsUrl: undefined, log })).rejects.toThrow(
        "root key 'rk_nope' does not exist",
      );
      expect(await revokeAndAnnounce(db.sql, rootKeyId, { natsUrl: undefined, log })).toEqual({
        revokedAt: expect.any(Number),
      });
      await vi.waitFor(() =>
        expect(heard).toEqual([{ workspaceId: "ws_default", keyId: rootKeyId, hash: hashKey(rootKey) }]),
      );
      // Anything else on the channel (not a KeyChanged, or one naming no key) is not relayed.
      await db.sql`SELECT pg_notify(${KEY_CHANGES_CHANNEL}, ${Buffer.from([0xff, 0xff]).toString("base64")})`;
      await db.sql.notify(KEY_CHANGES_CHANNEL, "");
      await new Promise((r) => setTimeout(r, 200));
      expect(heard).toHaveLength(1);
    } finally {
      await stop();
    }
  });

  it("reach the gateways on NATS when NATS_URL is set, and say so when NATS cannot be reached", async () => {
    const nats = await NatsBus.connect(natsUrl, log, "key-changes-test");
    const heard: ReturnType<typeof decoded>[] = [];
    nats.subscribe(KEY_CHANGED, (data) => heard.push(decoded(data)));
    await nats.nc.flush();
    try {
      const { rootKeyId, rootKey } = await createRootKey(db.sql, { permissions: ["*"] });
      await revokeAndAnnounce(db.sql, rootKeyId, { natsUrl, log });
      await vi.waitFor(() =>
        expect(heard).toContainEqual({ workspaceId: "ws_default", keyId: rootKeyId, hash: hashKey(rootKey) }),
      );

      const other = await createRootKey(db.sql, { permissions: ["*"] });
      const unreachable = await revokeAndAnnounce(db.sql, other.rootKeyId, {
        natsUrl: "nats://127.0.0.1:1",
        log,
      });
      expect(unreachable).toEqual({ revokedAt: expect.any(Number), natsError: expect.any(String) });
      // The revocation itself stands.
      const [row] = await db.sql`SELECT revoked_at FROM root_keys WHERE id = ${other.rootKeyId}`;
      expect(row!.revoked_at).toBe(unreachable.revokedAt);
    } finally {
      await nats.close();
    }
  });
});
