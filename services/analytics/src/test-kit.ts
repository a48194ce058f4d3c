import { randomBytes } from "node:crypto";
import { type ClickHouseClient, createClient } from "@clickhouse/client";
import { ConnectError } from "@connectrpc/connect";
import type { ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { errorDetailOf } from "@latchkey/runtime";
import { openClickHouse } from "./clickhouse.ts";
import { migrateClickHouse } from "./migrations.ts";

/** The ClickHouse server integration tests use: TEST_CLICKHOUSE_URL, else the one start-services.sh runs. */
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

import { callerOf } from "@latchkey/runtime/testing";

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
