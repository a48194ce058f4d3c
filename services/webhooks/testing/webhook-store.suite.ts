import { randomUUID } from "node:crypto";
import { type AuditRecord, auditSuccess, newId } from "@latchkey/runtime";
import { beforeEach, describe, expect, it } from "vitest";
import {
  cursorOf,
  type EventRecord,
  OUTBOX_FULL,
  type WebhookRecord,
  type WebhookStore,
} from "../src/store/webhook-store.ts";

/** What every WebhookStore must do; run on memory (unit) and PostgreSQL (integration). */
export function webhookStoreContract(name: string, makeStore: () => Promise<WebhookStore> | WebhookStore) {
  describe(`${name} webhook store`, () => {
    // Stores may be shared between tests (one database per file): each test works in its own workspaces.
    let wsA = "";
    let wsB = "";
    let store: WebhookStore;
    beforeEach(async () => {
      wsA = `ws_${randomUUID()}`;
      wsB = `ws_${randomUUID()}`;
      store = await makeStore();
    });

    const webhook = (over: Partial<WebhookRecord> = {}): WebhookRecord => ({
      id: newId("wh"),
      workspaceId: wsA,
      url: "https://example.com/hook",
      events: ["key.created", "key.deleted"],
      description: "",
      enabled: true,
      disabledReason: null,
      sealedSecret: "sealed",
      consecutiveFailures: 0,
      createdAt: 1_000,
      updatedAt: 1_000,
      ...over,
    });
    const event = (over: Partial<EventRecord> = {}): EventRecord => ({
      id: newId("evt"),
      type: "key.created",
      workspaceId: wsA,
      occurredAt: 500,
      dataJson: '{"keyId":"key_1","apiId":"api_1"}',
      ...over,
    });
    const page = (limit = 100, after?: string) => ({ limit, after });
    /** Claims what is due in this test's workspace (a shared database holds other tests' deliveries too). */
    const claim = async (now: number) =>
      (await store.claimDue(now, 1_000, 60_000)).filter((c) => c.workspaceId === wsA);
    const failure = { attemptedAt: 2_000, statusCode: 500, latencyMs: 12, error: "status 500" };
    /**
     * Leases, far ahead, every delivery due by `now` (other tests' in a shared database), so a claim
     * of a few slots in this test sees only this test's workspaces.
     */
    const isolate = (now: number) => store.claimDue(now, 1_000_000, 1e13);

    it("creates webhooks up to the workspace's most, and counts each workspace apart", async () => {
      expect(await store.createWebhook(webhook(), 2)).toBe(true);
      expect(await store.createWebhook(webhook(), 2)).toBe(true);
      expect(await store.createWebhook(webhook(), 2)).toBe(false);
      expect(await store.createWebhook(webhook({ workspaceId: wsB }), 2)).toBe(true);
      expect((await store.listWebhooks(wsA, page())).length).toBe(2);
    });

    it("finds, lists by id in pages, updates and deletes only within the workspace", async () => {
      const ids = ["wh_a", "wh_b", "wh_c"].map((p) => `${p}${randomUUID()}`);
      for (const id of ids) await store.createWebhook(webhook({ id }), 20);
      const first = await store.listWebhooks(wsA, page(2));
      expect(first.map((w) => w.id)).toEqual(ids.slice(0, 2));
      expect((await store.listWebhooks(wsA, page(2, first[1]!.id))).map((w) => w.id)).toEqual([ids[2]]);
      expect(await store.findWebhook(wsB, ids[0]!)).toBeUndefined();
      expect(await store.listWebhooks(wsB, page())).toEqual([]);
      expect(await store.updateWebhook(wsB, ids[0]!, { url: "https://evil.example", updatedAt: 2 })).toBe(
        false,
      );
      expect(await store.deleteWebhook(wsB, ids[0]!)).toBe(false);
      expect((await store.findWebhook(wsA, ids[0]!))?.url).toBe("https://example.com/hook");

      expect(
        await store.updateWebhook(wsA, ids[0]!, {
          url: "https://example.org/x",
          events: ["credits.low"],
          description: "d",
          updatedAt: 2_000,
        }),
      ).toBe(true);
      const updated = await store.findWebhook(wsA, ids[0]!);
      expect(updated).toMatchObject({
        url: "https://example.org/x",
        events: ["credits.low"],
        description: "d",
        updatedAt: 2_000,
      });
      expect(await store.deleteWebhook(wsA, ids[0]!)).toBe(true);
      expect(await store.findWebhook(wsA, ids[0]!)).toBeUndefined();
    });

    it("takes an event once per enabled webhook of its workspace that wants its type, however often it comes", async () => {
      const wants = webhook();
      const other = webhook({ events: ["credits.low"] });
      const off = webhook({ enabled: false });
      const elsewhere = webhook({ workspaceId: wsB });
      for (const w of [wants, other, off, elsewhere]) await store.createWebhook(w, 20);
      const e = event();
      expect(await store.intake([e], 1_000)).toBe(1);
      expect(await store.intake([e, e], 1_001)).toBe(0);
      const deliveries = await store.listDeliveries(wsA, wants.id, page());
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toMatchObject({
        eventId: e.id,
        eventType: "key.created",
        status: "pending",
        attempts: [],
        nextAttemptAt: 1_000,
        deliveredAt: null,
        createdAt: 1_000,
        dataJson: e.dataJson,
        occurredAt: 500,
      });
      for (const w of [other, off]) expect(await store.listDeliveries(wsA, w.id, page())).toEqual([]);
      expect(await store.listDeliveries(wsB, elsewhere.id, page())).toEqual([]);
      // Another workspace cannot read them through its own workspace id.
      expect(await store.listDeliveries(wsB, wants.id, page())).toEqual([]);
    });

    it("lists deliveries newest first, in pages, and by status", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      for (let i = 0; i < 3; i++) await store.intake([event()], 1_000 + i);
      const all = await store.listDeliveries(wsA, w.id, page());
      expect(all.map((d) => d.createdAt)).toEqual([1_002, 1_001, 1_000]);
      const first = await store.listDeliveries(wsA, w.id, page(2));
      const rest = await store.listDeliveries(wsA, w.id, page(2, cursorOf(first[1]!)));
      expect([...first, ...rest].map((d) => d.id)).toEqual(all.map((d) => d.id));
      expect(await store.listDeliveries(wsA, w.id, page(2, "not a cursor"))).toEqual([]);
      const [claimed] = await claim(1_002);
      await store.recordAttempt(
        claimed!,
        { ...failure, statusCode: 200, error: null },
        { status: "delivered" },
        15,
        "",
      );
      expect((await store.listDeliveries(wsA, w.id, page(), "delivered")).map((d) => d.id)).toEqual([
        claimed!.id,
      ]);
      expect(await store.listDeliveries(wsA, w.id, page(), "pending")).toHaveLength(2);
      expect(await store.listDeliveries(wsA, w.id, page(), "failed")).toEqual([]);
    });

    it("claims due deliveries of enabled webhooks once per lease", async () => {
      const w = webhook();
      const off = webhook();
      await store.createWebhook(w, 20);
      await store.createWebhook(off, 20);
      await store.intake([event()], 1_000);
      await store.updateWebhook(wsA, off.id, { enabled: false, updatedAt: 1_000 });
      expect(await claim(999)).toEqual([]);
      const claimed = await claim(1_000);
      expect(claimed).toHaveLength(2 - 1);
      expect(claimed[0]).toMatchObject({
        webhookId: w.id,
        url: w.url,
        sealedSecret: "sealed",
        attemptsMade: 0,
      });
      expect(await claim(60_999)).toEqual([]);
      // A worker that died: the lease ends and the delivery is taken again.
      expect(await claim(61_000)).toHaveLength(1);
    });

    it("claims at most the given number per webhook, counting every worker's unexpired leases", async () => {
      await isolate(1_000);
      const slow = webhook();
      const fast = webhook({ events: ["credits.low"] });
      await store.createWebhook(slow, 20);
      await store.createWebhook(fast, 20);
      await store.intake([event(), event(), event()], 1_000);
      await store.updateWebhook(wsA, fast.id, { events: ["key.created"], updatedAt: 1_000 });
      await store.updateWebhook(wsA, slow.id, { events: ["credits.low"], updatedAt: 1_000 });
      await store.intake([event(), event()], 2_000);
      const caps = { perWorkspace: 100, perWebhook: 2 };
      const ids = async (now: number, limit = 1_000) =>
        (await store.claimDue(now, limit, 60_000, caps))
          .filter((c) => c.workspaceId === wsA)
          .map((c) => c.webhookId)
          .sort();
      // Another worker holds one of the slow webhook's, leased until 61,000.
      expect(await ids(1_000, 1)).toEqual([slow.id]);
      expect(await ids(2_000)).toEqual([slow.id, fast.id, fast.id].sort());
      // Every lease in force: nothing more for either webhook.
      expect(await ids(3_000)).toEqual([]);
      // After the first lease only: the slow webhook may have one more.
      expect(await ids(61_000)).toEqual([slow.id]);
      // After every lease: two of each, with nothing in flight.
      expect(await ids(200_000)).toEqual([slow.id, slow.id, fast.id, fast.id].sort());
    });

    it("counts an attempt in flight until it is recorded, and not after", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      await store.intake([event(), event(), event()], 1_000);
      const caps = { perWorkspace: 100, perWebhook: 2 };
      const first = (await store.claimDue(1_000, 1_000, 60_000, caps)).filter((c) => c.workspaceId === wsA);
      expect(first).toHaveLength(2);
      expect((await store.claimDue(1_000, 1_000, 60_000, caps)).filter((c) => c.workspaceId === wsA)).toEqual(
        [],
      );
      await store.recordAttempt(
        first[0]!,
        { ...failure, statusCode: 200, error: null },
        { status: "delivered" },
        15,
        "",
      );
      const next = (await store.claimDue(2_000, 1_000, 60_000, caps)).filter((c) => c.workspaceId === wsA);
      expect(next.map((c) => c.attemptsMade)).toEqual([0]);
      // A webhook disabled while attempts are in flight leaves no lease counted against it.
      await store.updateWebhook(wsA, w.id, { enabled: false, updatedAt: 2_000 });
      await store.updateWebhook(wsA, w.id, { enabled: true, updatedAt: 2_000 });
      await store.intake([event(), event()], 3_000);
      expect(
        (await store.claimDue(3_000, 1_000, 60_000, caps)).filter((c) => c.workspaceId === wsA),
      ).toHaveLength(2);
    });

    it("keeps each workspace within its cap of attempts in flight and gives the slots by turns, the workspace with the fewest in flight first", async () => {
      await isolate(4_000);
      const wsC = `ws_${randomUUID()}`;
      const hooksA = [webhook(), webhook(), webhook()];
      const hookB = webhook({ workspaceId: wsB });
      const hookC = webhook({ workspaceId: wsC });
      for (const h of [...hooksA, hookB, hookC]) await store.createWebhook(h, 20);
      // Workspace A's backlog is the oldest due: 10 events for each of its 3 webhooks.
      await store.intake(
        Array.from({ length: 10 }, () => event()),
        1_000,
      );
      await store.intake([event({ workspaceId: wsB }), event({ workspaceId: wsB })], 2_000);
      await store.intake([event({ workspaceId: wsC })], 3_000);
      const mine = new Set([wsA, wsB, wsC]);
      const caps = { perWorkspace: 3, perWebhook: 2 };
      const claim3 = async (now: number, limit: number) =>
        (await store.claimDue(now, limit, 60_000, caps)).filter((c) => mine.has(c.workspaceId));
      const spaces = (claimed: { workspaceId: string }[]) =>
        claimed.map((c) => (c.workspaceId === wsA ? "A" : c.workspaceId === wsB ? "B" : "C"));
      // One slot: the oldest due of the workspaces with none in flight.
      expect(spaces(await claim3(3_000, 1))).toEqual(["A"]);
      // Two more: B and C have none in flight, A one: B's and C's firsts.
      expect(spaces(await claim3(3_000, 2)).sort()).toEqual(["B", "C"]);
      // Each has one in flight: A may have two more (its cap is 3), B its second; C has none due.
      expect(spaces(await claim3(3_000, 1_000)).sort()).toEqual(["A", "A", "B"]);
      // A is at its cap: nothing more for it, however much it has due.
      expect(spaces(await claim3(4_000, 1_000))).toEqual([]);
    });

    it("gives a workspace's slots to its oldest due first", async () => {
      const w = webhook();
      const other = webhook();
      await store.createWebhook(w, 20);
      await store.createWebhook(other, 20);
      const old = event();
      await store.intake([old], 1_000);
      await store.updateWebhook(wsA, other.id, { events: ["credits.low"], updatedAt: 1_000 });
      await store.intake([event(), event()], 2_000);
      await store.updateWebhook(wsA, other.id, { events: ["key.created"], updatedAt: 2_000 });
      await store.updateWebhook(wsA, w.id, { events: ["credits.low"], updatedAt: 2_000 });
      await store.intake([event()], 1_500);
      const caps = { perWorkspace: 2, perWebhook: 2 };
      const claimed = (await store.claimDue(3_000, 1_000, 60_000, caps)).filter((c) => c.workspaceId === wsA);
      // Due at 1,000 (both webhooks' firsts) and at 1,500 (the other's): the two oldest.
      expect(claimed.map((c) => c.eventId === old.id)).toEqual([true, true]);
    });

    it("queues no more than a workspace's bound of pending deliveries, earlier events first, and others' apart", async () => {
      const hooks = [webhook(), webhook()];
      for (const h of hooks) await store.createWebhook(h, 20);
      const elsewhere = webhook({ workspaceId: wsB });
      await store.createWebhook(elsewhere, 20);
      const events = [event(), event(), event()];
      const refused: [string, number][] = [];
      const bounded = {
        maxPendingPerWorkspace: 5,
        refused: (ws: string, n: number) => refused.push([ws, n]),
      };
      expect(await store.intake([...events, event({ workspaceId: wsB })], 1_000, bounded)).toBe(6);
      expect(refused.splice(0)).toEqual([[wsA, 1]]);
      const pending = async (id: string, ws = wsA) =>
        (await store.listDeliveries(ws, id, page())).map((d) => d.eventId).sort();
      // The earlier events first: the third's second delivery is the one refused.
      expect([...(await pending(hooks[0]!.id)), ...(await pending(hooks[1]!.id))].sort()).toEqual(
        [events[0]!.id, events[0]!.id, events[1]!.id, events[1]!.id, events[2]!.id].sort(),
      );
      expect((await pending(elsewhere.id, wsB)).length).toBe(1);
      // Full: nothing more, and an event already taken is not counted as refused.
      expect(await store.intake([event(), events[0]!], 2_000, bounded)).toBe(0);
      expect(refused.splice(0)).toEqual([[wsA, 2]]);
      // A delivery that ends makes room for one more.
      const [c] = await claim(2_000);
      await store.recordAttempt(
        c!,
        { ...failure, statusCode: 200, error: null },
        { status: "delivered" },
        15,
        "",
      );
      expect(await store.intake([event()], 3_000, bounded)).toBe(1);
      expect(refused).toEqual([[wsA, 1]]);
    });

    it("redelivers nothing past the workspace's bound of pending deliveries, and a missing delivery still reads as missing", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      const other = webhook({ workspaceId: wsB });
      await store.createWebhook(other, 20);
      await store.intake([event(), event(), event({ workspaceId: wsB })], 1_000);
      const [first] = await store.listDeliveries(wsA, w.id, page());
      const [theirs] = await store.listDeliveries(wsB, other.id, page());
      expect(await store.redeliver(wsA, w.id, first!.id, newId("dlv"), 2_000, undefined, 0, 2)).toBe(
        OUTBOX_FULL,
      );
      expect(
        await store.redeliver(wsA, w.id, "dlv_missing", newId("dlv"), 2_000, undefined, 0, 2),
      ).toBeUndefined();
      // Another workspace has room of its own.
      const again = newId("dlv");
      expect(await store.redeliver(wsB, other.id, theirs!.id, again, 2_000, undefined, 0, 2)).toBe(again);
      // Room again once a delivery ends.
      const [c] = await claim(2_000);
      await store.recordAttempt(
        c!,
        { ...failure, statusCode: 200, error: null },
        { status: "delivered" },
        15,
        "",
      );
      const made = newId("dlv");
      expect(await store.redeliver(wsA, w.id, first!.id, made, 3_000, undefined, 0, 2)).toBe(made);
      expect((await store.listDeliveries(wsA, w.id, page(), "pending")).length).toBe(2);
    });

    it("records attempts in order, schedules the next, and fails or delivers the delivery", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      await store.intake([event()], 1_000);
      const [c] = await claim(1_000);
      await store.recordAttempt(c!, failure, { status: "pending", nextAttemptAt: 7_000 }, 15, "");
      let [d] = await store.listDeliveries(wsA, w.id, page());
      expect(d).toMatchObject({ status: "pending", nextAttemptAt: 7_000, attempts: [failure] });
      const [again] = await claim(7_000);
      expect(again?.attemptsMade).toBe(1);
      const ok = { attemptedAt: 7_000, statusCode: 204, latencyMs: 3, error: null };
      await store.recordAttempt(again!, ok, { status: "delivered" }, 15, "");
      [d] = await store.listDeliveries(wsA, w.id, page());
      expect(d).toMatchObject({
        status: "delivered",
        nextAttemptAt: null,
        deliveredAt: 7_000,
        attempts: [failure, ok],
      });
      expect(await claim(100_000)).toEqual([]);

      await store.intake([event()], 8_000);
      const [third] = await claim(8_000);
      await store.recordAttempt(third!, failure, { status: "failed" }, 15, "");
      expect((await store.findDelivery(wsA, w.id, third!.id))?.status).toBe("failed");
      expect(await store.findDelivery(wsB, w.id, third!.id)).toBeUndefined();
    });

    it("records an attempt only while its claim holds the delivery: a stale lease changes nothing", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      await store.intake([event()], 1_000);
      const [first] = await claim(1_000);
      expect(first!.lease).toBe(61_000);
      // The first worker's lease ends; another worker takes the delivery again.
      const [second] = await claim(61_000);
      expect(second).toMatchObject({ id: first!.id, lease: 121_000, attemptsMade: 0 });
      expect(
        await store.recordAttempt(first!, failure, { status: "pending", nextAttemptAt: 5_000 }, 1, "why"),
      ).toEqual({ recorded: false, disabled: false });
      expect(await store.findDelivery(wsA, w.id, first!.id)).toMatchObject({
        status: "pending",
        nextAttemptAt: 121_000,
        attempts: [],
      });
      const ok = { attemptedAt: 61_000, statusCode: 200, latencyMs: 4, error: null };
      expect(await store.recordAttempt(second!, ok, { status: "delivered" }, 1, "why")).toEqual({
        recorded: true,
        disabled: false,
      });
      // The first worker's late failure cannot turn it back, count a failure, or disable the webhook.
      expect(await store.recordAttempt(first!, failure, { status: "failed" }, 1, "why")).toEqual({
        recorded: false,
        disabled: false,
      });
      expect(await store.recordAttempt(second!, failure, { status: "failed" }, 1, "why")).toEqual({
        recorded: false,
        disabled: false,
      });
      expect(await store.findDelivery(wsA, w.id, first!.id)).toMatchObject({
        status: "delivered",
        nextAttemptAt: null,
        deliveredAt: 61_000,
        attempts: [ok],
      });
      expect(await store.findWebhook(wsA, w.id)).toMatchObject({
        enabled: true,
        disabledReason: null,
        consecutiveFailures: 0,
      });
    });

    it("disables a webhook at the run of failures given, with its reason, and enabling clears both", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      await store.intake([event(), event(), event()], 1_000);
      const claimed = await claim(1_000);
      expect(claimed).toHaveLength(3);
      const ok = { ...failure, statusCode: 200, error: null };
      expect(await store.recordAttempt(claimed[0]!, failure, { status: "failed" }, 2, "why")).toEqual({
        recorded: true,
        disabled: false,
      });
      // A success ends the run: one more failure is a run of one.
      await store.recordAttempt(claimed[1]!, ok, { status: "delivered" }, 2, "why");
      expect(
        await store.recordAttempt(
          claimed[2]!,
          failure,
          { status: "pending", nextAttemptAt: 2_000 },
          2,
          "why",
        ),
      ).toEqual({ recorded: true, disabled: false });
      expect((await store.findWebhook(wsA, w.id))?.consecutiveFailures).toBe(1);
      const [next] = await claim(2_000);
      expect(
        await store.recordAttempt(next!, failure, { status: "pending", nextAttemptAt: 3_000 }, 2, "why"),
      ).toEqual({ recorded: true, disabled: true });
      expect(await store.findWebhook(wsA, w.id)).toMatchObject({
        enabled: false,
        disabledReason: "why",
        consecutiveFailures: 2,
      });
      // Disabled: its pending delivery is failed with no further attempt, and new events are not taken.
      expect(await store.findDelivery(wsA, w.id, next!.id)).toMatchObject({
        status: "failed",
        nextAttemptAt: null,
        attempts: [failure, failure],
      });
      expect(await claim(10_000)).toEqual([]);
      expect(await store.intake([event()], 10_000)).toBe(0);
      await store.updateWebhook(wsA, w.id, { enabled: true, updatedAt: 11_000 });
      expect(await store.findWebhook(wsA, w.id)).toMatchObject({
        enabled: true,
        disabledReason: null,
        consecutiveFailures: 0,
      });
      // Enabling does not bring it back; a redelivery sends it again.
      expect(await claim(11_000)).toEqual([]);
      const again = newId("dlv");
      await store.redeliver(wsA, w.id, next!.id, again, 11_000);
      expect((await claim(11_000)).map((c) => c.id)).toEqual([again]);
    });

    it("fails a webhook's pending deliveries when an update disables it, and only that webhook's", async () => {
      const w = webhook();
      const other = webhook();
      await store.createWebhook(w, 20);
      await store.createWebhook(other, 20);
      await store.intake([event(), event()], 1_000);
      const [c] = (await claim(1_000)).filter((x) => x.webhookId === w.id);
      await store.recordAttempt(
        c!,
        { ...failure, statusCode: 200, error: null },
        { status: "delivered" },
        15,
        "",
      );
      expect(await store.updateWebhook(wsA, w.id, { enabled: false, updatedAt: 2_000 })).toBe(true);
      const statuses = async (id: string) =>
        (await store.listDeliveries(wsA, id, page())).map((d) => [
          d.status,
          d.nextAttemptAt,
          d.attempts.length,
        ]);
      expect((await statuses(w.id)).sort()).toEqual([
        ["delivered", null, 1],
        ["failed", null, 0],
      ]);
      expect(await statuses(other.id)).toEqual([
        ["pending", 61_000, 0],
        ["pending", 61_000, 0],
      ]);
      await store.updateWebhook(wsA, w.id, { enabled: true, updatedAt: 3_000 });
      expect((await claim(100_000)).map((x) => x.webhookId)).toEqual([other.id, other.id]);
    });

    it("makes new deliveries and redeliveries due after the first wait given", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      await store.intake([event()], 1_000, { firstDelayMs: 5_000 });
      const [d] = await store.listDeliveries(wsA, w.id, page());
      expect(d).toMatchObject({ createdAt: 1_000, nextAttemptAt: 6_000 });
      expect(await claim(5_999)).toEqual([]);
      const id = newId("dlv");
      await store.redeliver(wsA, w.id, d!.id, id, 7_000, undefined, 3_000);
      expect(await store.findDelivery(wsA, w.id, id)).toMatchObject({
        createdAt: 7_000,
        nextAttemptAt: 10_000,
      });
      expect((await claim(9_999)).map((c) => c.id)).toEqual([d!.id]);
    });

    it("redelivers the same event as a new delivery, only within the workspace", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      const e = event();
      await store.intake([e], 1_000);
      const [d] = await store.listDeliveries(wsA, w.id, page());
      expect(await store.redeliver(wsB, w.id, d!.id, newId("dlv"), 2_000)).toBeUndefined();
      expect(await store.redeliver(wsA, w.id, "dlv_missing", newId("dlv"), 2_000)).toBeUndefined();
      const id = newId("dlv");
      expect(await store.redeliver(wsA, w.id, d!.id, id, 2_000)).toBe(id);
      const again = await store.findDelivery(wsA, w.id, id);
      expect(again).toMatchObject({
        eventId: e.id,
        eventType: e.type,
        dataJson: e.dataJson,
        status: "pending",
        nextAttemptAt: 2_000,
        redeliveryOf: d!.id,
      });
      // The original event is still taken once.
      expect(await store.intake([e], 3_000)).toBe(0);
    });

    it("deletes a webhook with its deliveries, and prunes only finished deliveries older than given", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      await store.intake([event(), event()], 1_000);
      const [c] = await claim(1_000);
      await store.recordAttempt(c!, failure, { status: "failed" }, 15, "");
      expect(await store.pruneDeliveries(1_000)).toBe(0);
      expect(await store.pruneDeliveries(1_001)).toBeGreaterThanOrEqual(1);
      const left = await store.listDeliveries(wsA, w.id, page());
      expect(left.map((d) => d.status)).toEqual(["pending"]);
      await store.deleteWebhook(wsA, w.id);
      expect(await store.listDeliveries(wsA, w.id, page())).toEqual([]);
    });

    it("prunes in batches until none is left", async () => {
      const w = webhook();
      await store.createWebhook(w, 20);
      await store.intake([event(), event(), event(), event(), event()], 1_000);
      for (const c of await claim(1_000)) {
        await store.recordAttempt(c, failure, { status: "failed" }, 100, "");
      }
      // Batches of 2: 2, 2, 1 (and any other test's finished deliveries in a shared database).
      const batches: number[] = [];
      expect(
        await store.pruneDeliveries(1_001, 2, (n) => {
          batches.push(n);
          return true;
        }),
      ).toBeGreaterThanOrEqual(5);
      expect(batches.length).toBeGreaterThanOrEqual(3);
      expect(batches.every((n) => n <= 2)).toBe(true);
      expect(await store.listDeliveries(wsA, w.id, page())).toEqual([]);
    });

    it("writes a change's audit record only when it makes the change, readable by its workspace only", async () => {
      const caller = { workspaceId: wsA, rootKeyId: "rk_a", requestId: "req_a" } as Parameters<
        typeof auditSuccess
      >[0];
      const audit = (operation: string, id: string): AuditRecord =>
        auditSuccess(caller, wsA, operation, [{ type: "webhook", id }], [], 1_000);
      const ops = async () =>
        (await store.listAudit(wsA, { limit: 100 })).map((r) => [r.operation, r.resources[0]!.id]);
      const w = webhook();
      expect(await store.createWebhook(w, 1, audit("webhooks.create", w.id))).toBe(true);
      const over = webhook();
      expect(await store.createWebhook(over, 1, audit("webhooks.create", over.id))).toBe(false);
      expect(await store.updateWebhook(wsB, w.id, { updatedAt: 2 }, audit("webhooks.update", w.id))).toBe(
        false,
      );
      expect(await store.updateWebhook(wsA, w.id, { updatedAt: 2 }, audit("webhooks.update", w.id))).toBe(
        true,
      );
      await store.intake([event()], 1_000);
      const [d] = await store.listDeliveries(wsA, w.id, page());
      expect(
        await store.redeliver(wsA, w.id, "dlv_missing", newId("dlv"), 2, audit("webhooks.redeliver", "x")),
      ).toBeUndefined();
      expect(
        await store.redeliver(wsA, w.id, d!.id, newId("dlv"), 2, audit("webhooks.redeliver", w.id)),
      ).toBeDefined();
      // The system's record of a disabling, written by the attempt that disables it and no other.
      const system = (id: string) =>
        auditSuccess("system", wsA, "webhooks.disable", [{ type: "webhook", id }], ["enabled"], 3);
      const claimed = await claim(1_000);
      expect(claimed).toHaveLength(2);
      await store.recordAttempt(claimed[0]!, failure, { status: "failed" }, 2, "why", system("early"));
      expect(
        await store.recordAttempt(claimed[1]!, failure, { status: "failed" }, 2, "why", system(w.id)),
      ).toEqual({ recorded: true, disabled: true });
      expect(await store.deleteWebhook(wsB, w.id, audit("webhooks.delete", w.id))).toBe(false);
      expect(await store.deleteWebhook(wsA, w.id, audit("webhooks.delete", w.id))).toBe(true);
      expect(await store.deleteWebhook(wsA, w.id, audit("webhooks.delete", "again"))).toBe(false);
      expect((await ops()).sort()).toEqual(
        [
          ["webhooks.create", w.id],
          ["webhooks.update", w.id],
          ["webhooks.redeliver", w.id],
          ["webhooks.disable", w.id],
          ["webhooks.delete", w.id],
        ].sort(),
      );
      expect(await store.listAudit(wsB, { limit: 100 })).toEqual([]);
      await store.recordAudit({ ...audit("webhooks.update", "wh_gone"), outcome: "failure" });
      expect((await store.listAudit(wsA, { limit: 100, outcome: "failure" })).length).toBe(1);
    });
  });
}
