import { AuditPruner, connect, createLogger, env, InternalAuth, migrate, serveRpc } from "@latchkey/runtime";
import { connect as connectNats } from "@nats-io/transport-node";
import { createWebhookDeps } from "./deps.ts";
import { type RunningIntake, startIntakeConsumer } from "./intake.ts";
import { webhookMigrations } from "./migrations.ts";
import { webhookRoutes } from "./routes.ts";
import { webhookSettingsFromEnv } from "./settings.ts";
import { WEBHOOKS_AUDIT_TABLE } from "./store/postgres-webhook-store.ts";
import { startWorker } from "./worker.ts";

/**
 * The webhooks service as its own process: PORT, DATABASE_URL, LATCHKEY_ENCRYPTION_KEY, NATS_URL,
 * LOG_LEVEL, AUDIT_RETENTION_DAYS and the WEBHOOK_* settings. It serves WebhookService, takes DomainEvents from JetStream
 * into its outbox, and delivers them.
 */
async function main() {
  const log = createLogger("webhooks", env.string("LOG_LEVEL", "info"));
  const port = env.int("PORT", 7075);
  // Calls are served only when the gateway signed them.
  const auth = InternalAuth.fromEnv();
  const settings = webhookSettingsFromEnv();
  const databaseUrl = env.required("DATABASE_URL");
  // Secrets are signed with, so they are kept sealed under this key, never hashed (secret.ts).
  const keyText = env.required("LATCHKEY_ENCRYPTION_KEY");
  const encryptionKey = Buffer.from(keyText, "base64");
  if (encryptionKey.length !== 32) {
    throw new Error(
      "LATCHKEY_ENCRYPTION_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)",
    );
  }
  const natsUrl = env.string("NATS_URL");
  // Audit records older than this many days are deleted in the background (packages/runtime/src/audit.ts).
  const auditRetentionDays = env.int("AUDIT_RETENTION_DAYS", 365, 1);
  const sql = connect(databaseUrl);
  await migrate(sql, "webhooks", webhookMigrations);
  const auditPruner = new AuditPruner(sql, WEBHOOKS_AUDIT_TABLE, {
    retentionDays: auditRetentionDays,
    log,
  }).start();
  const deps = createWebhookDeps({ sql, encryptionKey, settings, log });

  let intake: RunningIntake | undefined;
  const nats = natsUrl
    ? await connectNats({
        servers: natsUrl,
        name: "webhooks",
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
      })
    : undefined;
  // The durable consumer's name: the replicas of one deployment share it and split the work.
  const durable = env.string("WEBHOOK_CONSUMER", "webhooks")!;
  if (nats)
    intake = await startIntakeConsumer({
      nats,
      store: deps.store,
      clock: deps.clock,
      log,
      durable,
      firstDelayMs: settings.retryScheduleMs[0],
    });
  else
    log.warn(
      "NATS_URL is not set: no events reach this process, so no webhook is delivered but redeliveries",
    );
  const worker = startWorker(deps);

  const server = await serveRpc(
    webhookRoutes(deps),
    port,
    {
      ready: async () => {
        await sql`SELECT 1`;
        return nats === undefined || !nats.isClosed();
      },
    },
    undefined,
    { auth },
  );
  log.info({ port: server.port }, "webhooks service listening");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "webhooks service stopping");
    await server.close();
    await intake?.stop();
    await worker.stop();
    await auditPruner.stop();
    await nats?.close();
    await sql.end({ timeout: 5 });
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((err) => {
  console.error("webhooks service failed to start", err);
  process.exit(1);
});
