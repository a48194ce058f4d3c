import { env, runService } from "@latchkey/runtime";
import { createWebhookDeps } from "./deps.ts";
import { startIntakeConsumer } from "./intake.ts";
import { webhookMigrations } from "./migrations.ts";
import { webhookRoutes } from "./routes.ts";
import { webhookSettingsFromEnv } from "./settings.ts";
import { startWorker } from "./worker.ts";

// The webhooks service as its own process: it serves WebhookService, takes DomainEvents from
// JetStream into its outbox, and delivers them. runService reads and connects what its row of
// packages/runtime/src/contexts.ts names; the settings below are its own.
await runService("webhooks", {
  migrations: webhookMigrations,
  settings() {
    // Secrets are signed with, so they are kept sealed under this key, never hashed (secret.ts).
    const encryptionKey = Buffer.from(env.required("LATCHKEY_ENCRYPTION_KEY"), "base64");
    if (encryptionKey.length !== 32) {
      throw new Error(
        "LATCHKEY_ENCRYPTION_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)",
      );
    }
    return {
      encryptionKey,
      webhooks: webhookSettingsFromEnv(),
      // The durable consumer's name: the replicas of one deployment share it and split the work.
      durable: env.string("WEBHOOK_CONSUMER", "webhooks")!,
    };
  },
  async start(s, ctx) {
    const { log, sql } = ctx;
    const deps = createWebhookDeps({ sql, encryptionKey: s.encryptionKey, settings: s.webhooks, log });
    // The consumer reads on a connection of its own: a backlog it catches up on cannot crowd the
    // shared connection's JetStream requests.
    const nats = ctx.nats ? await ctx.natsConnection("intake") : undefined;
    if (nats) {
      const intake = await ctx.until("JetStream consumer", () =>
        startIntakeConsumer({
          nats,
          store: deps.store,
          clock: deps.clock,
          log,
          durable: s.durable,
          firstDelayMs: s.webhooks.retryScheduleMs[0],
        }),
      );
      ctx.onStop(() => intake.stop());
    } else {
      log.warn(
        "NATS_URL is not set: no events reach this process, so no webhook is delivered but redeliveries",
      );
    }
    const worker = startWorker(deps);
    ctx.onStop(() => worker.stop());
    return {
      routes: webhookRoutes(deps),
      ready: async () => {
        await sql`SELECT 1`;
        return nats === undefined || !nats.isClosed();
      },
    };
  },
});
