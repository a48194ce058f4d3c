import { createRootKey, createWorkspace } from "@latchkey/keys";
import { Unkey } from "@unkey/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analyticsOptions, type Stack, startStack } from "./testing/process-stack.ts";

// Unkey's own SDK's analytics.getRatelimits against Latchkey's separate processes on real ClickHouse:
// ratelimits.limit, multiLimit and a verification's named limit -> RatelimitChecked on JetStream ->
// the analytics consumer -> ClickHouse -> the SQL views. And Latchkey's list operations, which Unkey lacks.
const analytics = analyticsOptions("sdk_ratelimits");
let stack: Stack;
let workspaceId: string;
let rootKey: string;
let unkey: Unkey;

beforeAll(async () => {
  stack = await startStack(analytics.options);
  // A workspace of its own: other tests' checks on the shared stream are not counted here.
  const ws = await createWorkspace(stack.db.sql, `sdk-ratelimits-${analytics.suffix}`);
  workspaceId = ws.workspaceId;
  rootKey = ws.rootKey;
  unkey = sdk(rootKey);
});
afterAll(async () => {
  await stack?.stop();
  await analytics.drop();
});

const sdk = (key: string) =>
  new Unkey({ rootKey: key, serverURL: stack.gateway.url, retryConfig: { strategy: "none" } });
const call = (operation: string, body: unknown, key = rootKey) => stack.call(operation, body, key);
const keyWith = async (...permissions: string[]) =>
  (await createRootKey(stack.db.sql, { workspace: workspaceId, permissions })).rootKey;

/** The query's rows once their `n` column adds up to `expected` (the consumer inserts about every second). */
async function rowsOnce(client: Unkey, query: string, expected: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { data } = await client.analytics.getRatelimits({ query });
    const total = data.reduce((sum, row) => sum + Number(row["n"] ?? 0), 0);
    if (total >= expected || Date.now() > deadline) return data;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function namespaceIds(): Promise<Record<string, string>> {
  const res = await call("ratelimits.listNamespaces", {});
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.data.map((ns: { id: string; name: string }) => [ns.name, ns.id]));
}

describe("Unkey's SDK analytics.getRatelimits against Latchkey on ClickHouse", () => {
  it("counts every check exactly once, standalone, multiLimit and a verification's named limit, in every view", async () => {
    const email = { namespace: "sdk-email", identifier: "user_1", limit: 3, duration: 60_000 };
    const outcomes: boolean[] = [];
    for (let i = 0; i < 5; i++) outcomes.push((await unkey.ratelimit.limit(email)).data.success);
    expect(outcomes).toEqual([true, true, true, false, false]);
    for (let i = 0; i < 2; i++) {
      expect((await unkey.ratelimit.limit({ ...email, identifier: "user_2" })).data.success).toBe(true);
    }
    const multi = await unkey.ratelimit.multiLimit([
      { namespace: "sdk-sms", identifier: "user_1", limit: 1, duration: 60_000 },
      { namespace: "sdk-sms", identifier: "user_2", limit: 1, duration: 60_000 },
    ]);
    expect(multi.data.passed).toBe(true);

    const { data: api } = await unkey.apis.createApi({ name: "sdk-ratelimits" });
    const { data: key } = await unkey.keys.createKey({
      apiId: api.apiId,
      ratelimits: [{ name: "requests", limit: 1, duration: 60_000, autoApply: true }],
    });
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) codes.push((await unkey.keys.verifyKey({ key: key.key })).data.code);
    expect(codes).toEqual(["VALID", "RATE_LIMITED", "RATE_LIMITED"]);

    const ids = await namespaceIds();
    const rows = await rowsOnce(
      unkey,
      "SELECT namespace_id, identifier, sum(passed) AS passed, count() AS n FROM ratelimits_v1 GROUP BY namespace_id, identifier ORDER BY namespace_id, identifier",
      12,
    );
    const expected = [
      { namespace_id: ids["sdk-email"], identifier: "user_1", passed: 3, n: 5 },
      { namespace_id: ids["sdk-email"], identifier: "user_2", passed: 2, n: 2 },
      { namespace_id: ids["sdk-sms"], identifier: "user_1", passed: 1, n: 1 },
      { namespace_id: ids["sdk-sms"], identifier: "user_2", passed: 1, n: 1 },
      { namespace_id: "named:requests", identifier: key.keyId, passed: 1, n: 3 },
    ].sort((a, b) => `${a.namespace_id}${a.identifier}`.localeCompare(`${b.namespace_id}${b.identifier}`));
    expect(rows).toEqual(expected);

    // The aggregates say the same: passed and total per namespace, whatever bucket size.
    for (const view of ["minute", "hour", "day", "month"]) {
      const perView = await rowsOnce(
        unkey,
        `SELECT namespace_id, sum(passed) AS passed, sum(total) AS n FROM ratelimits_per_${view}_v1 GROUP BY namespace_id ORDER BY namespace_id`,
        12,
      );
      expect(perView, view).toEqual(
        [
          { namespace_id: ids["sdk-email"], passed: 5, n: 7 },
          { namespace_id: ids["sdk-sms"], passed: 2, n: 2 },
          { namespace_id: "named:requests", passed: 1, n: 3 },
        ].sort((a, b) => a.namespace_id!.localeCompare(b.namespace_id!)),
      );
    }
    // The columns Unkey names: one row per check.
    const [one] = await rowsOnce(
      unkey,
      `SELECT count() AS n, min(\`limit\`) AS lim, sum(tokens) AS tokens, max(reset_at) > 0 AS reset, max(remaining) AS rem, any(override_id) AS o FROM ratelimits_v1 WHERE namespace_id = '${ids["sdk-email"]}' AND identifier = 'user_2'`,
      2,
    );
    expect(one).toEqual({ n: 2, lim: 3, tokens: 2, reset: 1, rem: 2, o: "" });

    // The structured form, which the console charts, counts the same on ClickHouse.
    const structured = await call("analytics.getRatelimits", {
      start: Date.now() - 3_600_000,
      end: Date.now() + 60_000,
      granularity: "day",
      groupBy: "namespace",
    });
    expect(structured.status).toBe(200);
    const byNamespace = Object.fromEntries(
      structured.body.data.map((b: { namespaceId: string; passed: number; refused: number }) => [
        b.namespaceId,
        [b.passed, b.refused],
      ]),
    );
    expect(byNamespace).toEqual({
      [ids["sdk-email"]!]: [5, 2],
      [ids["sdk-sms"]!]: [2, 0],
      "named:requests": [1, 2],
    });
  });

  it("restricts a root key holding read_analytics on one namespace to its rows, whatever the query asks", async () => {
    const ids = await namespaceIds();
    const one = sdk(await keyWith(`ratelimit.${ids["sdk-sms"]}.read_analytics`));
    const { data } = await one.analytics.getRatelimits({
      query: "SELECT namespace_id, count() AS n FROM ratelimits_v1 GROUP BY namespace_id",
    });
    expect(data).toEqual([{ namespace_id: ids["sdk-sms"], n: 2 }]);
    const none = sdk(await keyWith("api.*.read_analytics"));
    const refused = await none.analytics
      .getRatelimits({ query: "SELECT count() AS n FROM ratelimits_v1" })
      .then(
        () => 200,
        (err: { statusCode: number }) => err.statusCode,
      );
    expect(refused).toBe(403);
  });

  it("refuses a query over another table with a 400 naming the views", async () => {
    const res = await call("analytics.getRatelimits", { query: "SELECT * FROM ratelimits_raw" });
    expect(res.status).toBe(400);
    expect(res.body.error.detail).toContain("they read ratelimits_v1, ratelimits_per_minute_v1");
  });
});

describe("apis.listApis and ratelimits.listNamespaces (Latchkey's additions)", () => {
  it("lists every API of the workspace to api.*.read_api, page by page, and exactly the readable ones to a narrower key", async () => {
    const made: string[] = [];
    for (const name of ["list-a", "list-b", "list-c"]) {
      made.push((await call("apis.createApi", { name })).body.data.apiId);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const res = await call("apis.listApis", { limit: 1, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(1);
      seen.push(res.body.data[0].id);
      cursor = res.body.pagination.cursor;
      if (!res.body.pagination.hasMore) break;
    }
    expect(seen).toEqual(expect.arrayContaining(made));
    expect(new Set(seen).size).toBe(seen.length);

    const narrow = await keyWith(`api.${made[0]}.read_api`, `api.${made[2]}.read_api`);
    const listed = await call("apis.listApis", {}, narrow);
    expect(listed.body.data.map((a: { id: string }) => a.id)).toEqual([made[0], made[2]].sort());
    const other = await createWorkspace(stack.db.sql, `sdk-ratelimits-other-${analytics.suffix}`);
    expect((await call("apis.listApis", {}, other.rootKey)).body.data).toEqual([]);
    expect((await call("apis.listApis", {}, await keyWith("api.*.read_key"))).status).toBe(403);
  });

  it("lists the workspace's namespaces, and exactly the readable ones to a narrower key", async () => {
    await unkey.ratelimit.limit({ namespace: "sdk-list", identifier: "u", limit: 1, duration: 1_000 });
    const ids = await namespaceIds();
    expect(Object.keys(ids)).toEqual(expect.arrayContaining(["sdk-list"]));
    const narrow = await keyWith(`ratelimit.${ids["sdk-list"]}.read_namespace`);
    const listed = await call("ratelimits.listNamespaces", {}, narrow);
    expect(listed.body).toMatchObject({
      data: [{ id: ids["sdk-list"], name: "sdk-list" }],
      pagination: { hasMore: false },
    });
    expect((await call("ratelimits.listNamespaces", {}, await keyWith("ratelimit.*.limit"))).status).toBe(
      403,
    );
  });
});
