import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { createRouterTransport } from "@connectrpc/connect";
import { createGateway } from "@latchkey/gateway";
import { createKeysDeps, createRootKey, ensureRootKey, keysRoutes } from "@latchkey/keys";
import { createRatelimitDeps, ratelimitRoutes } from "@latchkey/ratelimit";
import { type Bus, createLogger, env, MemoryBus, NatsBus, systemClock } from "@latchkey/runtime";
import { dataDir, openDatabase } from "./database.ts";

/**
 * `pnpm start`: the gateway and every service in one process. With no
 * configuration it keeps its data in embedded PostgreSQL under DATA_DIR; with
 * DATABASE_URL and NATS_URL it uses those servers. Services talk through
 * in-memory Connect transports: the same routes as the separate processes,
 * without a network hop.
 */
const log = createLogger("latchkey");
const say = (line: string) => process.stdout.write(`${line}\n`);

async function main() {
  const db = await openDatabase({ reuseRunning: false });
  const natsUrl = env.string("NATS_URL");
  const bus: Bus = natsUrl ? await NatsBus.connect(natsUrl, log, "latchkey") : new MemoryBus();

  const keys = createKeysDeps({ sql: db.sql, bus, log: log.child({ service: "keys" }) });
  const ratelimit = createRatelimitDeps({ sql: db.sql, bus, log: log.child({ service: "ratelimit" }) });
  const gateway = createGateway({
    keys: createRouterTransport(keysRoutes(keys)),
    ratelimit: createRouterTransport(ratelimitRoutes(ratelimit)),
    log: log.child({ service: "gateway" }),
    clock: systemClock,
    bus,
  });

  const rootKey = await bootstrapRootKey(db.sql);
  const port = env.int("PORT", 7070);
  const server = http.createServer((req, res) => gateway.handle(req, res));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(port, env.string("HOST", "0.0.0.0"), resolve));

  say(`Latchkey is listening on http://localhost:${port} (${db.description})`);
  if (rootKey) say(`Root key (holds *): ${rootKey}`);
  say(
    `Try: curl -s localhost:${port}/v2/apis.createApi -H "Authorization: Bearer $ROOT_KEY" -d '{"name":"my-api"}'`,
  );

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down");
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await gateway.close();
    await bus.close();
    await db.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

/**
 * A root key to start with. LATCHKEY_ROOT_KEY becomes one (idempotently); else
 * the key this data directory was first started with is shown again (kept in
 * DATA_DIR/root-key, mode 0600); else a new one is made and kept there.
 */
async function bootstrapRootKey(sql: Parameters<typeof ensureRootKey>[0]): Promise<string | undefined> {
  const fromEnv = env.string("LATCHKEY_ROOT_KEY");
  if (fromEnv) {
    await ensureRootKey(sql, fromEnv);
    return fromEnv;
  }
  const file = join(dataDir(), "root-key");
  if (existsSync(file)) {
    const kept = readFileSync(file, "utf8").trim();
    await ensureRootKey(sql, kept);
    return kept;
  }
  const created = await createRootKey(sql, { permissions: ["*"], name: "bootstrap" });
  writeFileSync(file, `${created.rootKey}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return created.rootKey;
}

main().catch((err: unknown) => {
  log.error({ err }, "Latchkey failed to start");
  process.exit(1);
});
