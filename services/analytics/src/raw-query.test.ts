import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { checkRawQuery, MAX_ROWS } from "./raw-query.ts";

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

describe("checkRawQuery", () => {
  it("rewrites the reference's example over key_verifications_v1 with the workspace filter and a LIMIT", () => {
    const { sql, maxRows } = checkRawQuery(
      "SELECT COUNT(*) as total FROM key_verifications_v1 WHERE outcome = 'VALID' AND time >= now() - INTERVAL 7 DAY",
      scope,
    );
    expect(maxRows).toBe(MAX_ROWS);
    expect(sql).toBe(
      "SELECT * FROM (SELECT COUNT(*) as total FROM (SELECT request_id, time, workspace_id, api_id, api_id AS key_space_id, key_id, identity_id, external_id, outcome, tags, spent_credits, latency FROM key_verifications_raw WHERE workspace_id = 'ws_1') AS key_verifications_v1 WHERE outcome = 'VALID' AND time >= now() - INTERVAL 7 DAY) LIMIT 10000",
    );
  });

  it("restricts every alias to the caller's APIs and keeps the user's own table alias", () => {
    const { sql } = checkRawQuery(
      "SELECT v.key_id, sum(v.count) FROM key_verifications_per_day_v1 AS v GROUP BY v.key_id;",
      { workspaceId: "ws_1", apiIds: ["api_1", "api_2"] },
    );
    expect(sql).toContain(
      "WHERE workspace_id = 'ws_1' AND api_id IN ('api_1', 'api_2'))) AS v GROUP BY v.key_id",
    );
    expect(sql).toContain("SELECT v.key_id, sum(v.count) FROM");
    expect(sql.match(/workspace_id = 'ws_1'/g)).toHaveLength(1);
  });

  it("filters each alias in subqueries and joins, not only the outer one", () => {
    const { sql } = checkRawQuery(
      "SELECT a.key_id FROM (SELECT key_id FROM key_verifications_v1) a JOIN key_verifications_per_hour_v1 b USING key_id",
      scope,
    );
    expect(sql.match(/workspace_id = 'ws_1'/g)).toHaveLength(2);
  });

  it("escapes the workspace id it injects", () => {
    const { sql } = checkRawQuery("SELECT 1 FROM key_verifications_v1", {
      workspaceId: "ws_'x\\",
      apiIds: [],
    });
    expect(sql).toContain("workspace_id = 'ws_\\'x\\\\' AND api_id IN ('')");
  });

  it.each([
    ["INSERT INTO key_verifications_v1 VALUES (1)", "Only SELECT queries are allowed."],
    ["SELECT 1; DROP TABLE key_verifications_raw", "Only one statement is allowed."],
    ["SELECT * FROM system.tables", "Queries may read only key_verifications_v1"],
    ["SELECT * FROM key_verifications_raw", "'key_verifications_raw' is not one of them"],
    ["SELECT * FROM default.key_verifications_v1", "'default' is not one of them"],
    ["SELECT * FROM key_verifications_v1.x", "is not one of them"],
    ["SELECT * FROM url('http://x', CSV, 'a String')", "'url' is not one of them"],
    ["SELECT * FROM key_verifications_v1 JOIN numbers(10) n ON 1", "'numbers' is not one of them"],
    ["SELECT file('/etc/passwd')", "The function 'file' is not allowed"],
    ["SELECT dictGet('d', 'a', 1) FROM key_verifications_v1", "The function 'dictGet' is not allowed"],
    ["SELECT 1 FROM key_verifications_v1 WHERE key_id IN secret_table", "IN takes a parenthesised list"],
    ["SELECT 1 FROM key_verifications_v1 SETTINGS readonly = 0", "'SETTINGS' is not allowed"],
    ["SELECT 1 FROM key_verifications_v1 FORMAT CSV", "'FORMAT' is not allowed"],
    ["SELECT 1 INTO OUTFILE 'x'", "'INTO' is not allowed"],
    ["SELECT 1 -- what", "Comments are not allowed"],
    ["SELECT 1 /* what */", "Comments are not allowed"],
    ["SELECT 'unterminated", "unterminated string"],
    ["SELECT {p:String}", "Unexpected character '{'"],
    ["", "The query is empty."],
  ])("refuses %s", (sql, why) => {
    expect(refusal(sql)).toContain(why);
  });

  it("keeps quotes inside strings from ending them early", () => {
    const { sql } = checkRawQuery(
      "SELECT 1 FROM key_verifications_v1 WHERE key_id = 'a\\' FROM system.tables'",
      scope,
    );
    expect(sql).toContain("key_id = 'a\\' FROM system.tables'");
  });

  it("allows ARRAY JOIN over a column, which reads no table", () => {
    expect(() =>
      checkRawQuery(
        "SELECT tag, count() FROM key_verifications_v1 ARRAY JOIN tags AS tag GROUP BY tag",
        scope,
      ),
    ).not.toThrow();
  });
});
