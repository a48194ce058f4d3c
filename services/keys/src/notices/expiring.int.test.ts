import type { DomainEvent } from "@latchkey/proto/common/v1/common_pb";
import {
  connect,
  createLogger,
  DOMAIN_EVENT_SUBJECT,
  LoopProgress,
  migrate,
  type Sql,
  TestClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { keysMigrations } from "../migrations.ts";
import { announceExpiring, startExpiringNotices } from "./expiring.ts";

// key.expiring on real PostgreSQL: once per key and expiry, across replicas racing, bounded per
// workspace, and a loop that keeps moving when one workspace has thousands of keys due.

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 0, 1);
let db: TestDatabase;
let secondPool: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  secondPool = connect(db.url, { max: 10 });
  for (const ws of ["ws_a", "ws_b"]) {
    await db.sql`INSERT INTO workspaces (id, name, created_at) VALUES (${ws}, ${ws}, 0)`;
  }
});
afterAll(async () => {
  await secondPool?.end({ timeout: 5 });
  await db?.drop();
});
beforeEach(async () => {
  await db.sql`DELETE FROM key_notices`;
  await db.sql`DELETE FROM keys`;
  await db.sql`DELETE FROM apis`;
});

async function api(id: string, workspaceId: string, days = 7) {
  await db.sql`INSERT INTO apis (id, workspace_id, name, created_at, expiring_notice_days)
    VALUES (${id}, ${workspaceId}, ${id}, 0, ${days})`;
}

/** `count` keys of `apiId` expiring `inMs` from NOW (each a millisecond later than the one before). */
async function keys(apiId: string, workspaceId: string, count: number, inMs: number, prefix = apiId) {
  await db.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at, expires)
    SELECT ${prefix} || '_' || i, ${workspaceId}, ${apiId}, ${prefix} || '_h' || i, 'sk', 0, ${NOW + inMs}::bigint + i
    FROM generate_series(1, ${count}) AS i`;
}

const expiring = (sink: ReturnType<typeof keepingEventSink>) =>
  sink.kept
    .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
    .map((e) => e.message as DomainEvent)
    .filter((e) => e.type === "key.expiring")
    .map((e) => ({ id: e.id, workspaceId: e.workspaceId, data: JSON.parse(e.dataJson) }));

describe("key.expiring", () => {
  it("announces a key within its API's notice period once per expiry, and nothing else", async () => {
    await api("api_week", "ws_a");
    await api("api_off", "ws_a", 0);
    await keys("api_week", "ws_a", 1, 3 * DAY, "soon");
    await keys("api_week", "ws_a", 1, 8 * DAY, "later");
    await keys("api_week", "ws_a", 1, -DAY, "past");
    await keys("api_off", "ws_a", 1, DAY, "quiet");
    await keys("api_week", "ws_a", 1, DAY, "gone");
    await db.sql`UPDATE keys SET deleted_at = 1 WHERE id = 'gone_1'`;
    const sink = keepingEventSink();
    expect(await announceExpiring(db.sql, sink, NOW)).toBe(1);
    expect(await announceExpiring(db.sql, sink, NOW + 1000)).toBe(0);
    expect(expiring(sink)).toEqual([
      {
        id: expect.stringMatching(/^evt_/),
        workspaceId: "ws_a",
        data: { keyId: "soon_1", apiId: "api_week", expiresAt: NOW + 3 * DAY + 1, days: 7 },
      },
    ]);
    // A changed expiry is a new period: announced again; "later" comes due a day on.
    await db.sql`UPDATE keys SET expires = ${NOW + 5 * DAY} WHERE id = 'soon_1'`;
    expect(await announceExpiring(db.sql, sink, NOW + DAY + 2)).toBe(2);
    expect(expiring(sink).map((e) => e.data.keyId)).toEqual(["soon_1", "soon_1", "later_1"]);
  });

  it("announces each key once when two replicas run the same rounds at once", async () => {
    await api("api_race", "ws_a");
    await keys("api_race", "ws_a", 300, DAY);
    const one = keepingEventSink();
    const two = keepingEventSink();
    // Racing rounds see the same keys due: the one that inserts a key's row announces it, the other
    // skips it. Waves of six at once until a wave finds nothing.
    let total = 0;
    for (let announced = -1; announced !== 0; ) {
      const counts = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          announceExpiring(i % 2 ? db.sql : secondPool, i % 2 ? one : two, NOW, {
            perWorkspace: 100,
            perRound: 100,
          }),
        ),
      );
      announced = counts.reduce((a, b) => a + b, 0);
      total += announced;
    }
    expect(total).toBe(300);
    const ids = [...expiring(one), ...expiring(two)].map((e) => e.data.keyId);
    expect(ids).toHaveLength(300);
    expect(new Set(ids).size).toBe(300);
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM key_notices`;
    expect(row?.n).toBe(300);
  });

  it("serves a workspace with one key due beside one with thousands, and the loop moves until all are out", {
    timeout: 60_000,
  }, async () => {
    await api("api_flood", "ws_a");
    await api("api_one", "ws_b");
    await keys("api_flood", "ws_a", 3_000, DAY);
    // ws_b's key expires after all of ws_a's: by expiry alone it would come last.
    await keys("api_one", "ws_b", 1, 2 * DAY);
    const sink = keepingEventSink();
    const bounds = { perWorkspace: 100, perRound: 150 };
    expect(await announceExpiring(db.sql, sink, NOW, bounds)).toBe(101);
    expect(expiring(sink).filter((e) => e.workspaceId === "ws_b")).toHaveLength(1);

    const progress = new LoopProgress("keys.expiring.test", new TestClock(NOW));
    const stop = startExpiringNotices(db.sql, {
      clock: new TestClock(NOW),
      log: createLogger("keys", "silent"),
      events: sink,
      everyMs: 60_000,
      progress,
      bounds,
    });
    try {
      await expect.poll(() => expiring(sink).length, { timeout: 30_000, interval: 50 }).toBe(3_001);
      // 2,900 left in rounds of at most 100 (ws_a's bound), then the round that finds none.
      await expect.poll(() => progress.marks, { timeout: 5_000 }).toBe(30);
    } finally {
      stop();
    }
    expect(new Set(expiring(sink).map((e) => e.data.keyId)).size).toBe(3_001);
  });
});
