import {
  type Bus,
  connect,
  createLogger,
  env,
  InternalAuth,
  MemoryBus,
  migrate,
  NatsBus,
  serveRpc,
} from "@latchkey/runtime";
import { createIdentityDeps } from "./deps.ts";
import { identityMigrations } from "./migrations.ts";
import { identityRoutes } from "./routes.ts";

/** The identity service as its own process: PORT, DATABASE_URL, NATS_URL (optional), LOG_LEVEL. */
async function main() {
  const log = createLogger("identity", env.string("LOG_LEVEL", "info"));
  const port = env.int("PORT", 7073);
  // Calls are served only when the gateway or keys signed them.
  const auth = InternalAuth.fromEnv();
  const databaseUrl = env.required("DATABASE_URL");
  const natsUrl = env.string("NATS_URL");
  const sql = connect(databaseUrl);
  await migrate(sql, "identity", identityMigrations);
  // Without NATS, changes reach only this process: fine for one replica, stale caches elsewhere otherwise.
  const bus: Bus = natsUrl ? await NatsBus.connect(natsUrl, log, "identity") : new MemoryBus();
  if (!natsUrl) log.warn("NATS_URL is not set: identity changes are not announced to other processes");
  const deps = createIdentityDeps({ sql, bus, log });
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
