import { randomBytes } from "node:crypto";
import net from "node:net";
import { create } from "@bufbuild/protobuf";
import { type Caller, CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { connect, type Sql } from "./db.ts";

/** A caller of a workspace holding the given root-key permissions, for tests of the services. */
export const callerOf = (workspaceId: string, ...permissions: string[]): Caller =>
  create(CallerSchema, { workspaceId, rootKeyId: `rk_${workspaceId}`, permissions });

/**
 * The PostgreSQL server integration tests use: TEST_DATABASE_URL, else
 * DATABASE_URL, else the one start-services.sh runs.
 */
export const testServerUrl = () =>
  process.env["TEST_DATABASE_URL"] ??
  process.env["DATABASE_URL"] ??
  "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** A fresh, empty database per test file, so files run in parallel without seeing each other. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = connect(testServerUrl(), { max: 1 });
  const name = `latchkey_test_${randomBytes(6).toString("hex")}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(testServerUrl());
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 20 });
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
    },
  };
}

/** A TCP port free on 127.0.0.1 right now, for a server a test starts (and may restart) on a port it knows. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
