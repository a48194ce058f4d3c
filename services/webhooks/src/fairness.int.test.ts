import { randomBytes } from "node:crypto";
import { createLogger, domainEvent, loopProgress, migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, percentile, receiver, status, webhookTo } from "../testing/webhook-receiver.ts";
import { createWebhookDeps } from "./deps.ts";
import { InProcessIntake } from "./intake.ts";
import { webhookMigrations } from "./migrations.ts";
import { DEFAULT_SETTINGS } from "./settings.ts";
import { startWorker } from "./worker.ts";

let db: TestDatabase;
const log = createLogger("webhooks-test", "silent");
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "webhooks", webhookMigrations);
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await db.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("one workspace's slow and failing receivers against another's deliveries (npm start's intake and worker, PostgreSQL)", () => {
  it("delivers another workspace's events within 5 s (p99) while a workspace with the most webhooks floods events to receivers that answer just under the timeout or fail, and still delivers the flooder's", async () => {
    // The defaults (10 slots, 5 in flight per workspace, 2 per webhook, a claim every second and as
    // each attempt ends, the default schedule), with a 3 s timeout so the slow receivers turn over
    // within the test.
    const timeoutMs = 3_000;
    const deps = createWebhookDeps({
      sql: db.sql,
      encryptionKey: randomBytes(32),
      log,
      settings: { allowPrivateUrls: true, timeoutMs },
    });
    expect(deps.settings).toMatchObject({ batchSize: 10, maxInFlightPerWorkspace: 5, pollMs: 1_000 });
    let open = 0;
    let mostOpen = 0;
    const slow = await receiver((_n, res) => {
      mostOpen = Math.max(mostOpen, ++open);
      setTimeout(() => {
        open--;
        if (!res.destroyed) res.end();
      }, timeoutMs - 150);
    });
    const failing = await receiver(status(500));
    const healthy = await receiver();
    cleanups.push(slow.close, failing.close, healthy.close);

    const attacker = (await webhookTo(deps, slow.url)).workspaceId;
    for (let i = 1; i < DEFAULT_SETTINGS.maxWebhooksPerWorkspace; i++) {
      await webhookTo(deps, i < 10 ? slow.url : failing.url, { workspaceId: attacker });
    }
    const victim = await webhookTo(deps, healthy.url);
    const intake = new InProcessIntake(deps.store, deps.clock, log, { firstDelayMs: 0 });
    const worker = startWorker(deps);
    cleanups.push(
      () => worker.stop(),
      () => intake.close(),
    );
    const progress = loopProgress("webhooks.delivery");
    const marksBefore = progress.marks;

    // 20 s of attack: 20 of the attacker's events a second (each to its 20 webhooks), its disabled
    // webhooks enabled again every second, as its root key may; the victim's every 250 ms.
    const published = new Map<string, number>();
    const until = Date.now() + 20_000;
    for (let tick = 0; Date.now() < until; tick++) {
      intake.take(domainEvent("key.created", attacker, { keyId: `key_${tick}`, apiId: "api_a" }, Date.now()));
      if (tick % 5 === 0) {
        const e = domainEvent(
          "key.created",
          victim.workspaceId,
          { keyId: `key_${tick}`, apiId: "api_v" },
          Date.now(),
        );
        published.set(e.id, Date.now());
        intake.take(e);
      }
      if (tick % 20 === 0) {
        for (const w of await deps.store.listWebhooks(attacker, { limit: 100, after: undefined })) {
          if (!w.enabled)
            await deps.store.updateWebhook(attacker, w.id, { enabled: true, updatedAt: Date.now() });
        }
      }
      await sleep(50);
    }
    await eventually(() => healthy.received.length >= published.size, 15_000);

    const latencies = healthy.received.map((r) => r.at - published.get(String(r.headers["webhook-id"]))!);
    expect(new Set(healthy.received.map((r) => r.headers["webhook-id"]))).toEqual(new Set(published.keys()));
    expect(percentile(latencies, 99)).toBeLessThanOrEqual(5_000);
    // The attacker's deliveries went on, never more than its 5 in flight at once.
    const [{ delivered, attempts }] = (await db.sql`
      SELECT count(*) FILTER (WHERE d.status = 'delivered')::int AS delivered,
             (SELECT count(*)::int FROM webhook_attempts a JOIN webhook_deliveries x ON x.id = a.delivery_id
              WHERE x.workspace_id = ${attacker}) AS attempts
      FROM webhook_deliveries d WHERE d.workspace_id = ${attacker}`) as unknown as [
      { delivered: number; attempts: number },
    ];
    expect(delivered).toBeGreaterThanOrEqual(20);
    expect(failing.received.length).toBeGreaterThanOrEqual(10);
    // Failed attempts recorded besides the successes (the failing receiver's, and slow ones past the timeout).
    expect(attempts).toBeGreaterThanOrEqual(delivered + 10);
    expect(mostOpen).toBeLessThanOrEqual(5);
    expect(progress.marks - marksBefore).toBeGreaterThanOrEqual(delivered);
  }, 90_000);
});
