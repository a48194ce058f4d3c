import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { identityMigrations } from "@latchkey/identity";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, migrate, NatsBus } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll } from "vitest";
import type { KeysDeps } from "../src/deps.ts";
import { keysMigrations } from "../src/migrations.ts";
import { keysRoutes } from "../src/routes.ts";
import { keysDepsOverDatabase } from "./keys-deps.ts";

const natsUrl = process.env["TEST_NATS_URL"] ?? process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const log = createLogger("keys", "silent");

export interface KeysInstance {
  deps: KeysDeps;
  bus: NatsBus;
  client: Client<typeof KeysService>;
}

/**
 * Keys instances sharing one fresh PostgreSQL database (keys and identity
 * migrated), each with its identity service in process and its own NATS
 * connection: for tests of what a change made through one instance does to
 * another's caches. Call at the top of a test file: it registers the
 * beforeAll and afterAll that create and drop the database and close every
 * instance.
 */
export function keysInstancesOverNats(name: string): {
  instance(): Promise<KeysInstance>;
  /** The shared database, once beforeAll has run. */
  readonly db: TestDatabase;
} {
  let db: TestDatabase;
  const started: KeysInstance[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.sql, "keys", keysMigrations);
    await migrate(db.sql, "identity", identityMigrations);
  });
  afterAll(async () => {
    for (const i of started) await i.deps.close();
    for (const i of started) await i.bus.close();
    await db?.drop();
  });
  return {
    get db() {
      return db;
    },
    async instance() {
      const bus = await NatsBus.connect(natsUrl, log, name);
      const deps = keysDepsOverDatabase(db.sql, bus, log);
      const client = createClient(KeysService, createRouterTransport(keysRoutes(deps)));
      const i = { deps, bus, client };
      started.push(i);
      return i;
    },
  };
}
