import { randomBytes, randomUUID } from "node:crypto";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { createLogger, loopProgress, migrate, systemClock, TestClock } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  eventIn,
  eventually,
  keepingLogger,
  receiver as startReceiver,
  status,
  webhookTo,
} from "../testing/webhook-receiver.ts";
import { createWebhookDeps, type WebhookDeps } from "./deps.ts";
import { webhookAttempts } from "./metrics.ts";
import { webhookMigrations } from "./migrations.ts";
import { webhookRoutes } from "./routes.ts";
import { newSigningSecret } from "./secret.ts";
import type { WebhookSettings } from "./settings.ts";
import { deliverDue, startWorker } from "./worker.ts";

let db: TestDatabase;
const encryptionKey = randomBytes(32);
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

/** A receiver (testing/webhook-receiver.ts) closed after the file's tests. */
async function receiver(answer?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(answer);
  cleanups.push(r.close);
  return r;
}

function depsWith(settings: Partial<WebhookSettings>, clock = systemClock): WebhookDeps {
  return createWebhookDeps({
    sql: db.sql,
    encryptionKey,
    clock,
    log,
    settings: { allowPrivateUrls: true, pollMs: 20, ...settings },
  });
}

const page = { limit: 100, after: undefined };

describe("the delivery worker, against PostgreSQL and a real HTTP receiver", () => {
  it("delivers on the fourth attempt after three 500s, signed so standardwebhooks verifies it, with the same webhook-id each time", async () => {
    const r = await receiver((n, res) => {
      res.statusCode = n <= 3 ? 500 : 200;
      res.end();
    });
    const deps = depsWith({ retryScheduleMs: [0, 50, 50, 50, 50] });
    const hook = await webhookTo(deps, r.url);
    const e = eventIn(hook.workspaceId);
    await deps.store.intake([e], deps.clock.now());
    const counted = async () =>
      Object.fromEntries((await webhookAttempts.get()).values.map((v) => [v.labels.result, v.value]));
    const before = await counted();
    const worker = startWorker(deps);
    cleanups.push(() => worker.stop());
    await eventually(
      async () =>
        (await deps.store.listDeliveries(hook.workspaceId, hook.id, page))[0]?.status === "delivered",
    );
    await worker.stop();

    expect(r.received).toHaveLength(4);
    expect(r.received.map((x) => x.headers["webhook-id"])).toEqual([e.id, e.id, e.id, e.id]);
    const after = await counted();
    expect([
      (after["failure"] ?? 0) - (before["failure"] ?? 0),
      (after["success"] ?? 0) - (before["success"] ?? 0),
    ]).toEqual([3, 1]);
    const verifier = new Webhook(hook.secret);
    for (const x of r.received) {
      const payload = verifier.verify(x.body, {
        "webhook-id": String(x.headers["webhook-id"]),
        "webhook-timestamp": String(x.headers["webhook-timestamp"]),
        "webhook-signature": String(x.headers["webhook-signature"]),
      });
      expect(payload).toEqual({
        type: "key.created",
        timestamp: "2026-11-26T09:00:00.000Z",
        data: { keyId: "key_1", apiId: "api_1" },
      });
      expect(x.headers["content-type"]).toBe("application/json");
    }
    // Another secret does not verify it.
    expect(() =>
      new Webhook(newSigningSecret()).verify(r.received[3]!.body, {
        "webhook-id": String(r.received[3]!.headers["webhook-id"]),
        "webhook-timestamp": String(r.received[3]!.headers["webhook-timestamp"]),
        "webhook-signature": String(r.received[3]!.headers["webhook-signature"]),
      }),
    ).toThrow();

    const [d] = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(d!.attempts.map((a) => a.statusCode)).toEqual([500, 500, 500, 200]);
    expect(d!.attempts.map((a) => a.error)).toEqual(["status 500", "status 500", "status 500", null]);
    expect(d!.attempts.every((a) => a.latencyMs >= 0 && a.latencyMs < 5_000)).toBe(true);
    expect(d!.deliveredAt).toBe(d!.attempts[3]!.attemptedAt);
    expect(d!.nextAttemptAt).toBe(null);
    // A success ended the run of failures.
    expect((await deps.store.findWebhook(hook.workspaceId, hook.id))?.consecutiveFailures).toBe(0);
  });

  it("waits the schedule between attempts and fails the delivery after the last", async () => {
    const r = await receiver(status(503));
    const clock = new TestClock(Date.UTC(2026, 10, 26));
    const schedule = [0, 5_000, 300_000, 1_800_000];
    const deps = depsWith({ retryScheduleMs: schedule }, clock);
    const hook = await webhookTo(deps, r.url);
    await deps.store.intake([eventIn(hook.workspaceId)], clock.now());
    const t0 = clock.now();
    const delivery = async () => (await deps.store.listDeliveries(hook.workspaceId, hook.id, page))[0]!;

    expect(await deliverDue(deps)).toBeGreaterThanOrEqual(1);
    expect((await delivery()).nextAttemptAt).toBe(t0 + 5_000);
    clock.set(t0 + 4_999);
    await deliverDue(deps);
    expect(r.received).toHaveLength(1);
    clock.set(t0 + 5_000);
    await deliverDue(deps);
    expect(r.received).toHaveLength(2);
    expect((await delivery()).nextAttemptAt).toBe(t0 + 5_000 + 300_000);
    clock.set(t0 + 305_000);
    await deliverDue(deps);
    expect((await delivery()).nextAttemptAt).toBe(t0 + 305_000 + 1_800_000);
    clock.set(t0 + 2_105_000);
    await deliverDue(deps);
    const d = await delivery();
    expect(d.status).toBe("failed");
    expect(d.nextAttemptAt).toBe(null);
    expect(d.attempts.map((a) => [a.attemptedAt - t0, a.statusCode])).toEqual([
      [0, 503],
      [5_000, 503],
      [305_000, 503],
      [2_105_000, 503],
    ]);
    clock.advance(100 * 3600_000);
    await deliverDue(deps);
    expect(r.received).toHaveLength(4);
  });

  it("disables a webhook after the run of failures set, says why, fails its pending deliveries, and delivers redeliveries once enabled", async () => {
    let healthy = false;
    const r = await receiver((_n, res) => {
      res.statusCode = healthy ? 200 : 500;
      res.end();
    });
    const clock = new TestClock(Date.UTC(2026, 10, 26));
    const deps = depsWith(
      { retryScheduleMs: [0, 1_000, 1_000, 1_000, 1_000], disableAfterFailures: 3 },
      clock,
    );
    const hook = await webhookTo(deps, r.url);
    await deps.store.intake([eventIn(hook.workspaceId), eventIn(hook.workspaceId)], clock.now());
    await deliverDue(deps); // two failures
    clock.advance(1_000);
    await deliverDue(deps); // the third disables it; the fourth delivery attempt is not made
    expect(r.received.length).toBeGreaterThanOrEqual(3);
    const w = await deps.store.findWebhook(hook.workspaceId, hook.id);
    expect(w?.enabled).toBe(false);
    expect(w?.disabledReason).toBe(
      `Disabled automatically at ${new Date(clock.now()).toISOString()} after 3 consecutive failed attempts; the last: status 500. Fix the receiver, then enable it with webhooks.update.`,
    );
    // One record of the disabling, the system's, written with it: the webhook and the attempt's delivery.
    const records = await deps.store.listAudit(hook.workspaceId, { limit: 100 });
    expect(records).toEqual([
      {
        id: expect.stringMatching(/^audit_/),
        workspaceId: hook.workspaceId,
        time: clock.now(),
        actorType: "system",
        actorId: "system",
        operation: "webhooks.disable",
        resources: [
          { type: "webhook", id: hook.id },
          { type: "delivery", id: expect.stringMatching(/^dlv_/) },
        ],
        outcome: "success",
        errorCode: null,
        requestId: "",
        fields: ["enabled", "disabledReason"],
      },
    ]);
    expect(JSON.stringify(records)).not.toContain(r.url);
    const sent = r.received.length;
    clock.advance(60_000);
    await deliverDue(deps);
    expect(r.received).toHaveLength(sent);
    healthy = true;
    // Disabling failed its pending deliveries; enabling does not bring them back, a redelivery does.
    const failed = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(failed.map((d) => [d.status, d.nextAttemptAt])).toEqual([
      ["failed", null],
      ["failed", null],
    ]);
    await deps.store.updateWebhook(hook.workspaceId, hook.id, { enabled: true, updatedAt: clock.now() });
    expect(await deliverDue(deps)).toBe(0);
    for (const d of failed) {
      await deps.store.redeliver(hook.workspaceId, hook.id, d.id, `dlv_${d.id}_again`, clock.now());
    }
    expect(await deliverDue(deps)).toBe(2);
    const statuses = (await deps.store.listDeliveries(hook.workspaceId, hook.id, page)).map((d) => d.status);
    expect(statuses.sort()).toEqual(["delivered", "delivered", "failed", "failed"]);
    // Successes after it record nothing more.
    expect(await deps.store.listAudit(hook.workspaceId, { limit: 100 })).toHaveLength(1);
  });

  it("refills its slots as attempts end, two per webhook: a slow receiver holds up no other webhook", async () => {
    const slow = await receiver((_n, res) => setTimeout(() => res.end(), 1_500));
    const fast = await receiver();
    const clock = new TestClock(Date.now());
    const deps = depsWith({ batchSize: 4, pollMs: 60_000 }, clock);
    const slowHook = await webhookTo(deps, slow.url);
    const fastHook = await webhookTo(deps, fast.url);
    // The slow webhook's deliveries are the oldest, so a round taken in order would be all of them.
    await deps.store.intake(
      Array.from({ length: 4 }, () => eventIn(slowHook.workspaceId)),
      clock.now() - 1_000,
    );
    await deps.store.intake(
      Array.from({ length: 4 }, () => eventIn(fastHook.workspaceId)),
      clock.now(),
    );
    const started = Date.now();
    const worker = startWorker(deps);
    cleanups.push(() => worker.stop());
    await eventually(() => fast.received.length === 4, 5_000);
    // All four fast ones answered while the slow webhook had two attempts in flight, none answered.
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(slow.received).toHaveLength(2);
    await eventually(() => slow.received.length === 4, 10_000);
    await worker.stop();
    const statuses = async (id: string, ws: string) =>
      (await deps.store.listDeliveries(ws, id, page)).map((d) => d.status);
    expect(await statuses(fastHook.id, fastHook.workspaceId)).toEqual(Array(4).fill("delivered"));
    expect(await statuses(slowHook.id, slowHook.workspaceId)).toEqual(Array(4).fill("delivered"));
  });

  it("sends each delivery once when two workers claim at the same time (FOR UPDATE SKIP LOCKED)", async () => {
    const r = await receiver((_n, res) => setTimeout(() => res.end(), 5));
    const a = depsWith({ batchSize: 7 });
    const b = depsWith({ batchSize: 7 });
    const hook = await webhookTo(a, r.url);
    const events = Array.from({ length: 60 }, () => eventIn(hook.workspaceId));
    expect(await a.store.intake(events, a.clock.now())).toBe(60);
    const rounds = async (deps: WebhookDeps) => {
      while ((await deliverDue(deps)) > 0) {}
    };
    await Promise.all([rounds(a), rounds(b), rounds(a), rounds(b)]);
    const ids = r.received.map((x) => String(x.headers["webhook-id"]));
    expect(ids).toHaveLength(60);
    expect(new Set(ids)).toEqual(new Set(events.map((e) => e.id)));
    const deliveries = await a.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(deliveries.map((d) => d.attempts.length)).toEqual(Array(60).fill(1));
  });

  it("refuses a host that resolves to a loopback address when private URLs are not allowed: nothing is connected", async () => {
    const r = await receiver();
    const deps = depsWith({ allowPrivateUrls: false, retryScheduleMs: [0] });
    const hook = await webhookTo(deps, `http://localhost:${r.port}/hook`);
    await deps.store.intake([eventIn(hook.workspaceId)], deps.clock.now());
    await deliverDue(deps);
    const [d] = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(d?.status).toBe("failed");
    expect(d?.attempts).toHaveLength(1);
    expect(d?.attempts[0]?.statusCode).toBe(null);
    expect(d?.attempts[0]?.error).toBe(
      "address not allowed or not found: the host did not resolve to a public address; nothing was sent",
    );
    expect(r.received).toEqual([]);
  });

  it("refuses a literal private address stored before the rule applied, at delivery too", async () => {
    const r = await receiver();
    const deps = depsWith({ allowPrivateUrls: false, retryScheduleMs: [0] });
    const hook = await webhookTo(deps, r.url);
    await deps.store.intake([eventIn(hook.workspaceId)], deps.clock.now());
    await deliverDue(deps);
    const [d] = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(d?.attempts[0]?.error).toBe(
      "address not allowed: deliveries go to public addresses only; nothing was sent",
    );
    expect(r.received).toEqual([]);
  });

  it("does not follow a redirect: the 3xx is a failed attempt and its target is never asked", async () => {
    const target = await receiver();
    const r = await receiver((_n, res) => {
      res.statusCode = 307;
      res.setHeader("location", target.url);
      res.end();
    });
    const deps = depsWith({ retryScheduleMs: [0] });
    const hook = await webhookTo(deps, r.url);
    await deps.store.intake([eventIn(hook.workspaceId)], deps.clock.now());
    await deliverDue(deps);
    const [d] = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(d?.status).toBe("failed");
    expect(d?.attempts.map((a) => [a.statusCode, a.error])).toEqual([
      [307, "status 307: the answer was a redirect, which is not followed"],
    ]);
    expect(r.received).toHaveLength(1);
    expect(target.received).toEqual([]);
  });

  it("gives up an attempt at the timeout", async () => {
    const r = await receiver(() => {}); // never answers
    const deps = depsWith({ retryScheduleMs: [0, 60_000], timeoutMs: 300 });
    const hook = await webhookTo(deps, r.url);
    await deps.store.intake([eventIn(hook.workspaceId)], deps.clock.now());
    const started = Date.now();
    await deliverDue(deps);
    const took = Date.now() - started;
    const [d] = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(d?.status).toBe("pending");
    expect(d?.attempts.map((a) => [a.statusCode, a.error])).toEqual([[null, "timed out after 300 ms"]]);
    expect(d!.attempts[0]!.latencyMs).toBeGreaterThanOrEqual(299);
    expect(took).toBeLessThan(2_000);
  });

  it("reads no more than a small bound of a receiver's answer", async () => {
    const r = await receiver((_n, res) => {
      res.statusCode = 200;
      // An endless answer: the attempt still ends, as a success, long before the timeout.
      const chunk = Buffer.alloc(64 * 1024, 97);
      const write = () => {
        if (!res.destroyed && res.write(chunk)) setImmediate(write);
        else if (!res.destroyed) res.once("drain", write);
      };
      write();
    });
    const deps = depsWith({ retryScheduleMs: [0], timeoutMs: 5_000 });
    const hook = await webhookTo(deps, r.url);
    await deps.store.intake([eventIn(hook.workspaceId)], deps.clock.now());
    await deliverDue(deps);
    const [d] = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    expect(d?.attempts.map((a) => [a.statusCode, a.error])).toEqual([[200, null]]);
    expect(d!.attempts[0]!.latencyMs).toBeLessThan(5_000);
  });

  it("redelivers with the same webhook-id", async () => {
    const r = await receiver();
    const deps = depsWith({ retryScheduleMs: [0] });
    const hook = await webhookTo(deps, r.url);
    const e = eventIn(hook.workspaceId);
    await deps.store.intake([e], deps.clock.now());
    await deliverDue(deps);
    const [first] = await deps.store.listDeliveries(hook.workspaceId, hook.id, page);
    await deps.store.redeliver(hook.workspaceId, hook.id, first!.id, `dlv_${randomUUID()}`, deps.clock.now());
    await deliverDue(deps);
    expect(r.received.map((x) => x.headers["webhook-id"])).toEqual([e.id, e.id]);
    expect(r.received[0]!.body).toBe(r.received[1]!.body);
  });

  it("keeps claiming when every slot was busy as it looked: no wake-up is lost", async () => {
    // Two slots, each attempt 150 ms, a look every 20 ms: most looks find no free slot.
    const r = await receiver((_n, res) => setTimeout(() => res.end(), 150));
    const deps = depsWith({ batchSize: 2, pollMs: 20 });
    const hooks = [await webhookTo(deps, r.url)];
    for (let i = 0; i < 3; i++)
      hooks.push(await webhookTo(deps, r.url, { workspaceId: hooks[0]!.workspaceId }));
    await deps.store.intake(
      Array.from({ length: 4 }, () => eventIn(hooks[0]!.workspaceId)),
      deps.clock.now(),
    );
    const worker = startWorker(deps);
    cleanups.push(() => worker.stop());
    await eventually(() => r.received.length === 16, 15_000);
    await worker.stop();
    for (const h of hooks) {
      const statuses = (await deps.store.listDeliveries(h.workspaceId, h.id, page)).map((d) => d.status);
      expect(statuses).toEqual(Array(4).fill("delivered"));
    }
  });

  it("goes on while every slot is held by receivers that never answer: each timeout frees a slot, another workspace takes it first, and the delivery loop marks its progress", async () => {
    const silent = await receiver(() => {}); // answers nothing; the attempt ends at the timeout
    const healthy = await receiver();
    const timeoutMs = 1_500;
    const deps = depsWith({ batchSize: 10, maxInFlightPerWorkspace: 5, timeoutMs, pollMs: 200 });
    // Two workspaces, each with as many attempts in flight as it may have: all 10 slots.
    const flooders: { id: string; workspaceId: string }[] = [];
    for (const _ of [1, 2]) {
      const first = await webhookTo(deps, silent.url);
      flooders.push(first);
      for (let i = 0; i < 4; i++)
        flooders.push(await webhookTo(deps, silent.url, { workspaceId: first.workspaceId }));
      await deps.store.intake(
        Array.from({ length: 20 }, () => eventIn(first.workspaceId)),
        deps.clock.now(),
      );
    }
    const progress = loopProgress("webhooks.delivery");
    const worker = startWorker(deps);
    cleanups.push(() => worker.stop());
    await eventually(() => silent.received.length === 10, 5_000);
    const marks = progress.marks;
    const lastAt = progress.lastAt;
    const victim = await webhookTo(deps, healthy.url);
    await deps.store.intake([eventIn(victim.workspaceId)], deps.clock.now());
    const asked = Date.now();
    await eventually(() => healthy.received.length === 1, timeoutMs + 5_000);
    // It waited at most for the first attempts to time out: the freed slot went to it first.
    expect(Date.now() - asked).toBeLessThan(timeoutMs + 3_000);
    // The flooders' attempts went on: each of the first ten timed out and was recorded.
    await eventually(async () => {
      const [{ n }] = (await db.sql`
        SELECT count(*)::int AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.workspace_id IN ${db.sql(flooders.map((f) => f.workspaceId))}
          AND a.error = ${`timed out after ${timeoutMs} ms`}`) as unknown as [{ n: number }];
      return n >= 10;
    }, timeoutMs + 5_000);
    expect(silent.received.length).toBeGreaterThanOrEqual(10);
    expect(progress.marks).toBeGreaterThanOrEqual(marks + 10);
    expect(progress.lastAt).toBeGreaterThan(lastAt);
    await worker.stop();
  });

  it("deletes a large backlog of old deliveries in batches, marking each, while deliveries go on", async () => {
    const r = await receiver();
    const deps = depsWith({ retentionMs: 1_000 });
    const old = await webhookTo(deps, r.url);
    // 10,001 delivered deliveries a day old: three statements of at most 5,000.
    await db.sql`
      INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json,
                                      status, next_attempt_at, created_at, delivered_at)
      SELECT 'dlv_old_' || i, ${old.id}, ${old.workspaceId}, 'evt_old_' || i, 'key.created', 0, '{}',
             'delivered', NULL, ${Date.now() - 86_400_000}, ${Date.now() - 86_400_000}
      FROM generate_series(1, 10001) i`;
    const retention = loopProgress("webhooks.retention");
    const marks = retention.marks;
    const fresh = await webhookTo(deps, r.url);
    await deps.store.intake([eventIn(fresh.workspaceId)], deps.clock.now());
    const worker = startWorker(deps, { retentionEveryMs: 60_000 });
    cleanups.push(() => worker.stop());
    await eventually(async () => {
      const [{ n }] = (await db.sql`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = ${old.workspaceId}`) as unknown as [
        { n: number },
      ];
      return n === 0;
    }, 20_000);
    await eventually(() => r.received.length === 1, 5_000);
    // 5,000, 5,000, then the rest (and whatever else is old in this file's database), each marked.
    expect(retention.marks - marks).toBeGreaterThanOrEqual(3);
    expect((await deps.store.listDeliveries(fresh.workspaceId, fresh.id, page)).map((d) => d.status)).toEqual(
      ["delivered"],
    );
    await worker.stop();
  });

  it("tells the webhook's owner no address a host resolved to and no resolver's words; Latchkey's log has them", async () => {
    const r = await receiver();
    const keeping = keepingLogger();
    const deps = createWebhookDeps({
      sql: db.sql,
      encryptionKey,
      log: keeping,
      settings: { allowPrivateUrls: false, retryScheduleMs: [0], disableAfterFailures: 1, pollMs: 20 },
    });
    const loopback = await webhookTo(deps, `http://localhost:${r.port}/hook`);
    const nowhere = await webhookTo(deps, "http://latchkey-test-no-such-host.invalid/hook");
    const literal = await webhookTo(deps, `http://127.0.0.1:${r.port}/hook`);
    for (const h of [loopback, nowhere, literal]) {
      await deps.store.intake([eventIn(h.workspaceId)], deps.clock.now());
    }
    const worker = startWorker(deps);
    cleanups.push(() => worker.stop());
    const client = createClient(WebhookService, createRouterTransport(webhookRoutes(deps)));
    const caller = (workspaceId: string) => ({ workspaceId, rootKeyId: "rk_test", permissions: ["*"] });
    const answered = async (h: { id: string; workspaceId: string }) => {
      const deliveries = await client.listDeliveries({ caller: caller(h.workspaceId), webhookId: h.id });
      const webhooks = await client.listWebhooks({ caller: caller(h.workspaceId) });
      return { deliveries: deliveries.deliveries, webhook: webhooks.webhooks[0]! };
    };
    for (const h of [loopback, nowhere, literal]) {
      await eventually(async () => (await answered(h)).deliveries[0]?.status === "failed", 15_000);
    }
    await worker.stop();
    const hostRefused =
      "address not allowed or not found: the host did not resolve to a public address; nothing was sent";
    const addressRefused = "address not allowed: deliveries go to public addresses only; nothing was sent";
    for (const [h, error] of [
      [loopback, hostRefused],
      [nowhere, hostRefused],
      [literal, addressRefused],
    ] as const) {
      const { deliveries, webhook } = await answered(h);
      expect(deliveries.map((d) => d.attempts.map((a) => [a.statusCode ?? null, a.error]))).toEqual([
        [[null, error]],
      ]);
      expect(webhook.enabled).toBe(false);
      expect(webhook.disabledReason).toMatch(
        new RegExp(`; the last: ${error.replace(/[.*()]/g, "\\$&")}\\. Fix`),
      );
      // All it is told but the URL it gave.
      const text = JSON.stringify({ deliveries, webhook: { ...webhook, url: "" } }, (_k, v) =>
        typeof v === "bigint" ? String(v) : v,
      );
      for (const leak of [
        "127.0.0.1",
        "::1",
        "getaddrinfo",
        "ENOTFOUND",
        "EAI_AGAIN",
        "loopback",
        "resolves",
      ]) {
        expect(text).not.toContain(leak);
      }
    }
    expect(r.received).toEqual([]);
    // The details are Latchkey's: what localhost resolved to, what the resolver said.
    const details = keeping.lines
      .filter((l) => l.msg === "webhook attempt failed")
      .map((l) => [l["webhookId"], String(l["detail"])]);
    expect(details.find(([id]) => id === loopback.id)?.[1]).toMatch(
      /^WEBHOOK_BLOCKED_ADDRESS: refused: localhost resolves to (127\.0\.0\.1|::1) is a loopback address; nothing was sent$/,
    );
    expect(details.find(([id]) => id === nowhere.id)?.[1]).toMatch(/^(ENOTFOUND|EAI_AGAIN): getaddrinfo /);
    expect(details.find(([id]) => id === literal.id)?.[1]).toBe("127.0.0.1 is a loopback address");
  });
});
