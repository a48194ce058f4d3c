import { createClient, createRouterTransport } from "@connectrpc/connect";
import { identityMigrations } from "@latchkey/identity";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, MemoryBus, migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe } from "vitest";
import { hashIsolationSuite } from "../testing/hash-isolation.suite.ts";
import { keysDepsOverDatabase } from "../testing/keys-deps.ts";
import { createWorkspace } from "./admin.ts";
import type { KeysDeps } from "./deps.ts";
import { keysMigrations } from "./migrations.ts";
import { keysRoutes } from "./routes.ts";

let db: TestDatabase;
let workspaces: [string, string];
const started: KeysDeps[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  await migrate(db.sql, "identity", identityMigrations);
  workspaces = [
    (await createWorkspace(db.sql, "a")).workspaceId,
    (await createWorkspace(db.sql, "b")).workspaceId,
  ];
});
afterAll(async () => {
  for (const deps of started) await deps.close();
  await db?.drop();
});

describe("migrateKeys across workspaces (PostgreSQL)", () => {
  hashIsolationSuite(async () => {
    const deps = keysDepsOverDatabase(db.sql, new MemoryBus(), createLogger("keys", "silent"));
    started.push(deps);
    return { client: createClient(KeysService, createRouterTransport(keysRoutes(deps))), workspaces };
  });
});
