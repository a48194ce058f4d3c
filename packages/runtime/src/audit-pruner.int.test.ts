import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../testing/database.ts";
import { AuditPruner, auditTableSql } from "./audit.ts";
import { TestClock } from "./clock.ts";
import { LoopProgress } from "./progress.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 27);

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql.unsafe(auditTableSql("pruned_audit"));
});
afterAll(() => db.drop());

/** `n` records `ageDays` old, in the workspace given, written in one statement. */
async function records(n: number, ageDays: number, workspaceId: string) {
  await db.sql`
    INSERT INTO pruned_audit (id, workspace_id, time, actor_type, actor_id, operation, resources, resource_ids,
                              outcome, request_id, fields)
    SELECT ${`${workspaceId}_${ageDays}_`} || g, ${workspaceId}, ${NOW - ageDays * DAY}::bigint, 'root_key', 'rk',
           'keys.createKey', '[]'::jsonb, '{}', 'success', 'req', '{}'
    FROM generate_series(1, ${n}) g`;
}

describe("AuditPruner", () => {
  it("deletes a backlog of old records in bounded statements while records are written, marking progress at each", async () => {
    await records(25_000, 400, "ws_flood");
    await records(10, 400, "ws_other");
    await records(300, 1, "ws_other");
    const clock = new TestClock(NOW);
    const progress = new LoopProgress("test.audit.retention", clock);
    const pruner = new AuditPruner(db.sql, "pruned_audit", {
      retentionDays: 365,
      now: () => NOW,
      batch: 1_000,
      progress,
    });
    // New records keep coming while the backlog goes.
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await records(5, 0, `ws_new_${written++}`);
      }
    })();
    const deleted = await pruner.prune();
    writing = false;
    await writer;
    expect(deleted).toBe(25_010);
    // One mark per statement: 26 statements of at most 1,000 (the last finds fewer).
    expect(progress.marks).toBe(26);
    const [left] = await db.sql<{ old: number; young: number }[]>`
      SELECT count(*) FILTER (WHERE time < ${NOW - 365 * DAY}::bigint)::int AS old,
             count(*) FILTER (WHERE time >= ${NOW - 365 * DAY}::bigint)::int AS young
      FROM pruned_audit`;
    expect(left).toEqual({ old: 0, young: 300 + 5 * written });
  });

  it("marks progress on a run that finds nothing old", async () => {
    const progress = new LoopProgress("test.audit.retention.idle", new TestClock(NOW));
    const pruner = new AuditPruner(db.sql, "pruned_audit", { retentionDays: 365, now: () => NOW, progress });
    expect(await pruner.prune()).toBe(0);
    expect(progress.marks).toBe(1);
  });
});
