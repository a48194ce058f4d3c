import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import {
  connect as connectSql,
  createLogger,
  DirectEventSink,
  DOMAIN_EVENT,
  domainEvent,
  type EventType,
  type Sql,
} from "@latchkey/runtime";
import { callerOf } from "@latchkey/runtime/testing/caller";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./embedded-postgres.ts";
import { composeWebhooks } from "./webhooks.ts";

let db: TestDatabase;
let embedded: EmbeddedPostgres;
let embeddedSql: Sql;
const embeddedDir = mkdtempSync(join(tmpdir(), "latchkey-webhooks-pglite-"));
let server: http.Server;
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  embedded = await startEmbeddedPostgres(embeddedDir, (err) => {
    throw err;
  });
  embeddedSql = connectSql(embedded.url, { max: 4 });
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await db.drop();
  await embeddedSql.end({ timeout: 5 });
  await embedded.close();
  rmSync(embeddedDir, { recursive: true, force: true });
});

describe.each([
  ["PostgreSQL", () => db.sql],
  ["the embedded PGlite", () => embeddedSql],
])("npm start's composition of the webhooks context (no NATS) on %s", (_name, sqlOf) => {
  it("turns a DomainEvent published in process into a delivery, sent signed; other events go on to analytics", async () => {
    received.length = 0;
    const others: string[] = [];
    const analytics = new DirectEventSink((subject) => others.push(subject));
    const webhooks = await composeWebhooks({
      sql: sqlOf(),
      encryptionKey: randomBytes(32),
      events: analytics,
      settings: { allowPrivateUrls: true, pollMs: 20 },
      log: createLogger("webhooks", "silent"),
    });
    try {
      const client = createClient(WebhookService, webhooks.transport);
      const caller = callerOf("ws_start", "*");
      const { port } = server.address() as AddressInfo;
      const { webhookId, secret } = await client.createWebhook({
        caller,
        url: `http://127.0.0.1:${port}/hook`,
        events: ["identity.created"],
      });
      const e = domainEvent(
        "identity.created",
        "ws_start",
        { identityId: "id_1", externalId: "user_1" },
        Date.now(),
      );
      // The services publish to the sink the composition hands them; publishing never waits.
      webhooks.events.publish(DOMAIN_EVENT, e.id, e);
      const verified: EventType = { subject: "events.keys.verified", encode: () => new Uint8Array() };
      webhooks.events.publish(verified, "x", e);
      expect(others).toEqual(["events.keys.verified"]);
      await webhooks.flush();
      const listed = await client.listDeliveries({ caller, webhookId });
      expect(listed.deliveries.map((d) => [d.eventId, d.eventType])).toEqual([[e.id, "identity.created"]]);

      const until = Date.now() + 10_000;
      while (received.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(received).toHaveLength(1);
      const got = received[0]!;
      expect(got.headers["webhook-id"]).toBe(e.id);
      expect(
        new Webhook(secret).verify(got.body, {
          "webhook-id": String(got.headers["webhook-id"]),
          "webhook-timestamp": String(got.headers["webhook-timestamp"]),
          "webhook-signature": String(got.headers["webhook-signature"]),
        }),
      ).toMatchObject({ type: "identity.created", data: { identityId: "id_1", externalId: "user_1" } });
    } finally {
      await webhooks.close();
    }
  });
});
