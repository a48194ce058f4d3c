import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { checkRawQuery } from "./raw-query.ts";

const scope = { workspaceId: "ws_1", apiIds: undefined };

function refusal(sql: string): string {
  try {
    checkRawQuery(sql, scope);
  } catch (err) {
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.INVALID_ANALYTICS_QUERY);
    return (err as Error).message;
  }
  throw new Error(`expected '${sql}' to be refused`);
}

const RAW =
  "SELECT request_id, time, workspace_id, api_id, api_id AS key_space_id, key_id, identity_id, external_id, outcome, tags, spent_credits, latency FROM key_verifications_raw";

describe("checkRawQuery", () => {
  it("renders Unkey's example from its tree, the view a filtered subquery closed by BARRIER, with a LIMIT one past maxRows", () => {
    const { sql, maxRows } = checkRawQuery(
      "SELECT COUNT(*) as total FROM key_verifications_v1 WHERE outcome = 'VALID' AND time >= now() - INTERVAL 7 DAY",
      scope,
    );
    expect(maxRows).toBe(10_000);
    expect(sql).toBe(
      `SELECT * FROM (SELECT count(*) AS \`total\` FROM (${RAW} WHERE key_verifications_raw.workspace_id = 'ws_1' LIMIT 1000000000000000000) AS \`key_verifications_v1\` WHERE ((\`outcome\` = 'VALID') AND (\`time\` >= (now() - INTERVAL 7 DAY)))) LIMIT 10001`,
    );
  });

  it("restricts every view to the caller's APIs and keeps the caller's table alias", () => {
    const { sql } = checkRawQuery(
      "SELECT v.key_id, sum(v.count) FROM key_verifications_per_day_v1 AS v GROUP BY v.key_id;",
      { workspaceId: "ws_1", apiIds: ["api_1", "api_2"] },
    );
    expect(sql).toContain(
      "WHERE key_verifications_per_day.workspace_id = 'ws_1' AND key_verifications_per_day.api_id IN ('api_1', 'api_2') LIMIT 1000000000000000000)) AS `v` GROUP BY `v`.`key_id`",
    );
    expect(sql.match(/workspace_id = 'ws_1'/g)).toHaveLength(1);
  });

  it("re-escapes strings and never copies the caller's text", () => {
    const { sql } = checkRawQuery(
      "SELECT 1 FROM key_verifications_v1 WHERE key_id = 'a\\' OR ''1''=''1' -- x",
      scope,
    );
    expect(sql).toContain("(`key_id` = 'a\\' OR \\'1\\'=\\'1')");
    expect(sql).not.toContain("--");
  });

  it("inlines CTEs, each use filtered again", () => {
    const { sql } = checkRawQuery(
      "WITH k AS (SELECT key_id FROM key_verifications_v1) SELECT count() FROM k JOIN k AS k2 USING key_id",
      scope,
    );
    expect(sql).not.toContain("WITH");
    expect(sql.match(/workspace_id = 'ws_1'/g)).toHaveLength(2);
  });

  it("renders a long chain of one operator flat, so 150 ORed conditions are one level, not 150", () => {
    const ors = Array.from({ length: 150 }, (_, i) => `key_id = 'k${i}'`).join(" OR ");
    const { sql } = checkRawQuery(`SELECT count() FROM key_verifications_v1 WHERE ${ors}`, scope);
    expect(sql).toContain("((`key_id` = 'k0') OR (`key_id` = 'k1') OR (`key_id` = 'k2') OR");
    expect(sql).toContain("OR (`key_id` = 'k149'))");
    // Subtraction is not associative: it keeps its grouping.
    const { sql: minus } = checkRawQuery("SELECT 10 - 2 - 3 AS x FROM key_verifications_v1", scope);
    expect(minus).toContain("((10 - 2) - 3) AS `x`");
  });

  it("refuses what it does not allow, naming it", () => {
    expect(refusal("SELECT * FROM key_verifications_raw")).toMatch(/'key_verifications_raw' is not a table/);
    expect(refusal("SELECT * FROM system.tables")).toMatch(
      /Database-qualified table names are not allowed in analytics queries: 'system.tables'/,
    );
    expect(refusal("SELECT * FROM numbers(1)")).toMatch(
      /Table functions are not allowed in analytics queries: 'numbers\(...\)'/,
    );
    expect(refusal("SELECT sleep(1) FROM key_verifications_v1")).toMatch(
      /The function 'sleep' is not allowed/,
    );
    expect(refusal("SELECT 1 FROM key_verifications_v1 SETTINGS readonly = 0")).toMatch(
      /SETTINGS is not allowed/,
    );
    expect(refusal("WITH 1 AS x SELECT x")).toMatch(/WITH <expression> AS x is not allowed/);
    expect(refusal("SELECT 1; SELECT 2")).toMatch(/Only one statement is allowed/);
    expect(refusal("SELECT 1 FROM key_verifications_v1 LIMIT -1")).toMatch(/LIMIT takes a whole number/);
    expect(refusal("SELECT 1 FROM")).toMatch(
      /not in the supported SQL at line 1, column 14, near the end of the query/,
    );
  });
});

describe("checkRawQuery over the rate-limit views", () => {
  it("renders ratelimits_v1 as a workspace-filtered subquery of ratelimits_raw, restricted to the caller's namespaces", () => {
    const { sql } = checkRawQuery(
      "SELECT namespace_id, count() AS total FROM ratelimits_v1 WHERE passed = 0 GROUP BY namespace_id",
      { workspaceId: "ws_1", namespaceIds: ["rlns_1", "rlns_2"] },
      100,
      "ratelimits",
    );
    expect(sql).toBe(
      "SELECT * FROM (SELECT `namespace_id`, count() AS `total` FROM (SELECT request_id, time, workspace_id, namespace_id, identifier, passed, `limit`, remaining, reset_at, override_id, cost AS tokens, latency FROM ratelimits_raw WHERE ratelimits_raw.workspace_id = 'ws_1' AND ratelimits_raw.namespace_id IN ('rlns_1', 'rlns_2') LIMIT 1000000000000000000) AS `ratelimits_v1` WHERE (`passed` = 0) GROUP BY `namespace_id`) LIMIT 101",
    );
  });

  it("reads the hourly and daily rollups for the aggregates, and no namespace at all for a caller allowed none", () => {
    const scope = { workspaceId: "ws_1", namespaceIds: [] };
    const hour = checkRawQuery("SELECT * FROM ratelimits_per_hour_v1", scope, 10, "ratelimits").sql;
    expect(hour).toContain(
      "FROM ratelimits_per_hour WHERE ratelimits_per_hour.workspace_id = 'ws_1' AND 0 LIMIT",
    );
    const month = checkRawQuery("SELECT * FROM ratelimits_per_month_v1", scope, 10, "ratelimits").sql;
    expect(month).toContain("toStartOfMonth(toDateTime(intDiv(t, 1000), 'UTC')) AS time");
    expect(month).toContain("FROM ratelimits_per_day WHERE");
  });

  it("refuses the verification views to a rate-limit query, and the rate-limit views to a verification query", () => {
    expect(() =>
      checkRawQuery("SELECT * FROM key_verifications_v1", { workspaceId: "ws_1" }, 10, "ratelimits"),
    ).toThrow(/'key_verifications_v1' is not a table analytics queries may read; they read ratelimits_v1/);
    expect(refusal("SELECT * FROM ratelimits_v1")).toMatch(/they read key_verifications_v1/);
  });
});
