import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { toBinary } from "@bufbuild/protobuf";
import { type ClickHouseClient, createClient } from "@clickhouse/client";
import { ConnectError } from "@connectrpc/connect";
import type { ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { type KeyVerified, KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { type RatelimitChecked, RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { type EventType, errorDetailOf } from "@latchkey/runtime";
import { openClickHouse, openClickHouseQueryUser, type QueryRunner } from "../src/clickhouse.ts";
import { KEY_VERIFIED, RATELIMIT_CHECKED } from "../src/events.ts";
import { migrateClickHouse } from "../src/migrations.ts";

/** The ClickHouse server integration tests use: TEST_CLICKHOUSE_URL, else the one scripts/services.sh runs. */
export const testClickHouseUrl = () => process.env["TEST_CLICKHOUSE_URL"] ?? "http://127.0.0.1:8123";

export const testNatsUrl = () => process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";

export interface TestClickHouse {
  /** CLICKHOUSE_URL naming the fresh database. */
  url: string;
  database: string;
  client: ClickHouseClient;
  drop(): Promise<void>;
}

/** A fresh, migrated ClickHouse database, so test files (and tests) run in parallel without seeing each other. */
export async function createTestClickHouse(): Promise<TestClickHouse> {
  const database = `latchkey_test_${randomBytes(6).toString("hex")}`;
  const url = new URL(testClickHouseUrl());
  url.pathname = `/${database}`;
  const { client } = await openClickHouse(url.toString());
  await migrateClickHouse(client);
  return {
    url: url.toString(),
    database,
    client,
    async drop() {
      await client.close();
      const admin = createClient({ url: testClickHouseUrl() });
      await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      await admin.close();
    },
  };
}

/** The read-only query user scripts/clickhouse-users.sh provisions on the local test server. */
export const QUERY_USER = { name: "latchkey_query", password: "latchkey_query_test" };

/** The URL of `database` as the query user. */
export function queryUserUrl(database: string): string {
  const url = new URL(testClickHouseUrl());
  url.username = QUERY_USER.name;
  url.password = QUERY_USER.password;
  url.pathname = `/${database}`;
  return url.toString();
}

let provisioned: Promise<void> | undefined;

/**
 * Makes sure the query user logs in with the profile scripts/clickhouse-users.sh
 * writes, running the script (idempotent: it rewrites the user only when its
 * file differs, and returns once the user has that profile) once per process.
 */
export function ensureQueryUser(): Promise<void> {
  provisioned ??= (async () => {
    const script = fileURLToPath(new URL("../../../scripts/clickhouse-users.sh", import.meta.url));
    execFileSync("bash", [script], {
      stdio: "inherit",
      timeout: 60_000,
      env: { ...process.env, CLICKHOUSE_HTTP: testClickHouseUrl() },
    });
  })();
  return provisioned;
}

/**
 * One of the fixed databases the query user may read (its allow_databases
 * list in scripts/clickhouse-users.sh), emptied and migrated, with a runner
 * for the query user. Each test file that needs one takes its own slot.
 */
export async function createQueryUserClickHouse(
  slot: 1 | 2 | 3,
): Promise<TestClickHouse & { runner: QueryRunner }> {
  await ensureQueryUser();
  const database = `latchkey_test_query_${slot}`;
  const admin = createClient({ url: testClickHouseUrl() });
  await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
  await admin.close();
  const url = new URL(testClickHouseUrl());
  url.pathname = `/${database}`;
  const { client } = await openClickHouse(url.toString());
  await migrateClickHouse(client);
  const runner = openClickHouseQueryUser(queryUserUrl(database));
  return {
    url: url.toString(),
    database,
    client,
    runner,
    async drop() {
      await runner.client.close();
      await client.close();
      const admin = createClient({ url: testClickHouseUrl() });
      await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      await admin.close();
    },
  };
}

import { callerOf } from "@latchkey/runtime/testing/caller";

export { callerOf };

/** The domain reason and message of what `promise` rejected with. */
export async function rejection(
  promise: Promise<unknown>,
): Promise<{ reason: ErrorReason | undefined; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (!(err instanceof ConnectError)) throw err;
    return { reason: errorDetailOf(err)?.reason, message: err.rawMessage };
  }
  throw new Error("expected the call to fail, it succeeded");
}

/** Polls `check` until it answers true or `timeoutMs` passes. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The two events analytics counts, as their publishers' event types send them (encoded here by protobuf-es). */
export const keyVerifiedType: EventType<KeyVerified> = {
  subject: KEY_VERIFIED,
  encode: (m) => toBinary(KeyVerifiedSchema, m),
};
export const ratelimitCheckedType: EventType<RatelimitChecked> = {
  subject: RATELIMIT_CHECKED,
  encode: (m) => toBinary(RatelimitCheckedSchema, m),
};
