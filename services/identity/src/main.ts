import {
  AuditPruner,
  type Bus,
  connect,
  createLogger,
  ensureEventsStream,
  env,
  InternalAuth,
  JetStreamEventSink,
  MemoryBus,
  migrate,
  NatsBus,
  serveRpc,
} from "@latchkey/runtime";
import { createIdentityDeps } from "./deps.ts";
import { identityMigrations } from "./migrations.ts";
import { identityRoutes } from "./routes.ts";
import { IDENTITY_AUDIT_TABLE } from "./store/postgres-identity-store.ts";

/** The identity service as its own process: PORT, DATABASE_URL, NATS_URL (optional), LOG_LEVEL. */
async function main() {
  const log = createLogger("identity", env.string("LOG_LEVEL", "info"));
  const port = env.int("PORT", 7073);
  // Calls are served only when the gateway or keys signed them.
  const auth = InternalAuth.fromEnv();
  const databaseUrl = env.required("DATABASE_URL");
  const natsUrl = env.string("NATS_URL");
  // Audit records older than this many days are deleted in the background (packages/runtime/src/audit.ts).
  const auditRetentionDays = env.int("AUDIT_RETENTION_DAYS", 365, 1);
  const sql = connect(databaseUrl);
  await migrate(sql, "identity", identityMigrations);
  const auditPruner = new AuditPruner(sql, IDENTITY_AUDIT_TABLE, {
    retentionDays: auditRetentionDays,
    log,
  }).start();
  // Without NATS, changes reach only this process: fine for one replica, stale caches elsewhere otherwise.
  const nats = natsUrl ? await NatsBus.connect(natsUrl, log, "identity") : undefined;
  const bus: Bus = nats ?? new MemoryBus();
  if (!natsUrl) log.warn("NATS_URL is not set: identity changes are not announced to other processes");
  // identity.created and identity.deleted (events.domain) reach the webhooks through JetStream.
  if (nats) await ensureEventsStream(nats.nc);
  const events = nats ? new JetStreamEventSink(nats.nc, log) : undefined;
  const deps = createIdentityDeps({ sql, bus, log, ...(events ? { events } : {}) });
  const server = await serveRpc(
    identityRoutes(deps),
    port,
    {
      ready: async () => {
        await sql`SELECT 1`;
        return true;
      },
    },
    undefined,
    { auth },
  );
  log.info({ port: server.port }, "identity service listening");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "identity service stopping");
    await server.close();
    await auditPruner.stop();
    if (events) {
      await events.flush(5_000);
      events.close();
    }
    await bus.close();
    await sql.end({ timeout: 5 });
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((err) => {
  console.error("identity service failed to start", err);
  process.exit(1);
});
