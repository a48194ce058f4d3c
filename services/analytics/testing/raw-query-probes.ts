import { ErrorReason } from "@latchkey/runtime";
import { expect } from "vitest";
import { FAILURE_MESSAGES, type QueryFailure } from "../src/query-errors.ts";
import type { RatelimitCheck, Verification } from "../src/store/analytics-store.ts";
import { ratelimitCheck, verification } from "./analytics-store.suite.ts";

/**
 * Raw queries that try to read another workspace through the error channel:
 * expressions that throw (a conversion, a division by zero, an array index, a
 * regular expression) on the values of rows they were not meant to see, so
 * that ClickHouse's message would quote them. Shared by the tests against
 * ClickHouse 18.16 (raw-query-escapes.int.test.ts) and a current one
 * (raw-query-current-clickhouse.int.test.ts).
 */

/** The caller's rows: two verifications of ws_mine. */
export const T = Date.UTC(2026, 0, 15, 10, 30);

/** What the other workspace's rows hold; none may reach the caller, in rows or in a message. */
export const OTHER = [
  "ws_other",
  "key_other",
  "ext_other",
  "tag_other",
  "api_other",
  "req_other",
  "id_other",
];

/** ws_mine's two rows and ws_other's three, in one table: the workspaces share granules. */
export function probeRows(): Verification[] {
  return [
    verification({
      workspaceId: "ws_mine",
      apiId: "api_mine",
      keyId: "key_mine",
      time: T,
      tags: ["tag_mine"],
    }),
    verification({
      workspaceId: "ws_mine",
      apiId: "api_mine",
      keyId: "key_mine",
      time: T + 1,
      outcome: "RATE_LIMITED",
    }),
    ...[0, 1, 2].map((i) =>
      verification({
        requestId: `req_other_${i}`,
        workspaceId: "ws_other",
        apiId: "api_other",
        keyId: "key_other",
        externalId: "ext_other",
        identityId: "id_other",
        time: T + i,
        tags: ["tag_other"],
      }),
    ),
  ];
}

export type ProbeExpect =
  | { own: (rows: Record<string, unknown>[]) => void }
  | { failed: QueryFailure }
  | { refused: RegExp }
  /** Servers differ (18.16 refuses what later ones run): the caller's rows, or a failure of Latchkey's. */
  | { ownOrFailed: true };
const own = (check: (rows: Record<string, unknown>[]) => void = () => {}): ProbeExpect => ({ own: check });
const ownCount = (n: number) => own((rows) => expect(rows).toHaveLength(n));
const failed = (failure: QueryFailure): ProbeExpect => ({ failed: failure });
const ownOrFailed: ProbeExpect = { ownOrFailed: true };

const V = "key_verifications_v1";
/** '0' on the caller's rows; on another workspace's, its ids, which toInt64 cannot parse and would quote. */
const LEAK =
  "toInt64(if(workspace_id = 'ws_mine', '0', concat(workspace_id, '|', key_id, '|', external_id)))";

export const ERROR_PROBES: [string, ProbeExpect][] = [
  // The reported query: on the caller's rows it is 0, so it answers them; it never sees another's.
  [`SELECT * FROM ${V} WHERE ${LEAK} = 0`, ownCount(2)],
  [`SELECT count() AS n FROM ${V} WHERE ${LEAK} = 0`, own((rows) => expect(rows).toEqual([{ n: 2 }]))],
  [`SELECT * FROM ${V} WHERE workspace_id = 'ws_mine' AND ${LEAK} = 0`, ownCount(2)],
  [`SELECT * FROM ${V} WHERE ${LEAK} = 0 AND key_id != ''`, ownCount(2)],
  [`SELECT * FROM (SELECT * FROM ${V}) WHERE ${LEAK} = 0`, ownCount(2)],
  [`WITH r AS (SELECT * FROM ${V}) SELECT * FROM r WHERE ${LEAK} = 0`, ownCount(2)],
  [`SELECT key_id FROM ${V} WHERE ${LEAK} = 0 ORDER BY time LIMIT 1`, ownCount(1)],
  [
    `SELECT arrayJoin(tags) AS t FROM ${V} WHERE ${LEAK} = 0`,
    own((rows) => expect(rows).toEqual([{ t: "tag_mine" }])),
  ],
  [
    `SELECT count() AS n FROM key_verifications_per_minute_v1 WHERE ${LEAK} = 0`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  [`SELECT key_id FROM key_verifications_per_hour_v1 WHERE ${LEAK} = 0`, own()],
  [`SELECT key_id FROM key_verifications_per_day_v1 WHERE ${LEAK} = 0`, own()],
  [`SELECT key_id FROM key_verifications_per_month_v1 WHERE ${LEAK} = 0`, ownCount(2)],
  [
    `SELECT a.key_id FROM ${V} AS a JOIN ${V} AS b USING request_id WHERE toInt64(if(b.workspace_id = 'ws_mine', '0', concat(b.workspace_id, b.key_id))) = 0`,
    ownCount(2),
  ],
  [
    `SELECT a.key_id FROM ${V} AS a JOIN ${V} AS b ON a.request_id = b.request_id AND toInt64(if(b.workspace_id = 'ws_mine', '0', b.workspace_id)) = 0`,
    ownOrFailed,
  ],
  [
    `SELECT key_id, count() AS n FROM ${V} GROUP BY key_id HAVING toInt64(if(key_id = 'key_mine', '0', key_id)) = 0`,
    own((rows) => expect(rows).toEqual([{ key_id: "key_mine", n: 2 }])),
  ],
  [
    `SELECT count() AS n FROM ${V} WHERE key_id IN (SELECT key_id FROM ${V} WHERE ${LEAK} = 0)`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  [
    `SELECT (SELECT count() FROM ${V} WHERE ${LEAK} = 0) AS n`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  // Expressions that throw on the caller's own rows: the class of the failure, never ClickHouse's text.
  [
    `SELECT toInt64(concat(workspace_id, '|', key_id, '|', external_id)) AS n FROM ${V}`,
    failed("conversion_failed"),
  ],
  [`SELECT CAST(key_id AS Int64) AS n FROM ${V}`, failed("conversion_failed")],
  [`SELECT toDate(concat(key_id, external_id)) AS d FROM ${V}`, failed("conversion_failed")],
  [`SELECT toDateTime(key_id) AS d FROM ${V}`, failed("conversion_failed")],
  [`SELECT * FROM ${V} WHERE toUInt8(workspace_id) = 1`, failed("conversion_failed")],
  [`SELECT (SELECT toInt64(key_id) FROM ${V} LIMIT 1) AS n`, failed("conversion_failed")],
  [`SELECT intDiv(1, if(workspace_id = 'ws_mine', 0, 1)) AS n FROM ${V}`, failed("arithmetic_error")],
  [`SELECT modulo(length(key_id), length(external_id)) AS n FROM ${V}`, failed("arithmetic_error")],
  [`SELECT toDecimal64(length(key_id), 100) AS x FROM ${V}`, failed("argument_out_of_range")],
  [`SELECT * FROM ${V} WHERE match(key_id, '(unclosed')`, failed("invalid_regex")],
  [`SELECT no_such_column FROM ${V}`, failed("query_invalid")],
  [`SELECT key_verifications_raw.workspace_id FROM ${V}`, failed("query_invalid")],
  [`SELECT sum(key_id) AS n FROM ${V}`, failed("query_invalid")],
  [`SELECT key_id, count() AS n FROM ${V}`, failed("query_invalid")],
  // The same, made to throw on another workspace's rows only: they never reach the expression.
  [`SELECT intDiv(1, if(workspace_id = 'ws_other', 0, 1)) AS n FROM ${V}`, ownCount(2)],
  [`SELECT * FROM ${V} WHERE modulo(1, if(key_id = 'key_other', 0, 1)) = 0`, ownCount(2)],
  [
    `SELECT * FROM ${V} WHERE toDate(if(workspace_id = 'ws_mine', '2026-01-15', external_id)) > '2000-01-01'`,
    ownCount(2),
  ],
  [
    `SELECT * FROM ${V} WHERE toDateTime(if(workspace_id = 'ws_other', concat(workspace_id, key_id), '2026-01-15 00:00:00')) > '2000-01-01 00:00:00'`,
    ownCount(2),
  ],
  [`SELECT * FROM ${V} WHERE arrayElement([1], if(workspace_id = 'ws_mine', 1, 2)) = 1`, ownCount(2)],
  [
    `SELECT * FROM ${V} WHERE length(arrayElement(tags, if(has(tags, 'tag_other'), 99, 1))) >= 0`,
    ownCount(2),
  ],
  [
    `SELECT * FROM ${V} WHERE key_id LIKE if(workspace_id = 'ws_other', concat(external_id, '%'), 'key%')`,
    ownOrFailed,
  ],
  [
    `SELECT * FROM ${V} WHERE match(key_id, if(workspace_id = 'ws_other', concat('(', external_id), 'key'))`,
    ownOrFailed,
  ],
  [
    `SELECT arrayJoin(tags) AS t FROM ${V} WHERE toInt64(if(has(tags, 'tag_other'), arrayElement(tags, 1), '0')) = 0`,
    own((rows) => expect(rows).toEqual([{ t: "tag_mine" }])),
  ],
  [
    `SELECT * FROM ${V} WHERE toInt64(if(identity_id = 'id_other', concat(identity_id, request_id), '0')) = 0`,
    ownCount(2),
  ],
  // Functions that throw on purpose are not allowed at all.
  [
    `SELECT * FROM ${V} WHERE throwIf(workspace_id != 'ws_mine') = 0`,
    { refused: /The function 'throwIf' is not allowed/ },
  ],
];

/**
 * ws_mine's two rate-limit checks (one passed, one refused) and ws_other's
 * three, whose namespace, identifier, request and override ids are secrets of
 * OTHER, in one table.
 */
export function ratelimitProbeRows(): RatelimitCheck[] {
  return [
    ratelimitCheck({ workspaceId: "ws_mine", namespaceId: "rlns_mine", identifier: "user_mine", time: T }),
    ratelimitCheck({
      workspaceId: "ws_mine",
      namespaceId: "rlns_mine",
      identifier: "user_mine",
      time: T + 1,
      passed: false,
    }),
    ...[0, 1, 2].map((i) =>
      ratelimitCheck({
        requestId: `req_other_rl_${i}`,
        workspaceId: "ws_other",
        namespaceId: "id_other",
        identifier: "ext_other",
        overrideId: "key_other",
        time: T + i,
      }),
    ),
  ];
}

const R = "ratelimits_v1";
/** '0' on the caller's checks; on another workspace's, its ids, which toInt64 cannot parse and would quote. */
const RL_LEAK =
  "toInt64(if(workspace_id = 'ws_mine', '0', concat(workspace_id, '|', namespace_id, '|', identifier)))";

/** The error-channel probes over analytics.getRatelimits' views (ratelimitProbeRows). */
export const RATELIMIT_PROBES: [string, ProbeExpect][] = [
  [`SELECT * FROM ${R} WHERE ${RL_LEAK} = 0`, ownCount(2)],
  [`SELECT count() AS n FROM ${R} WHERE ${RL_LEAK} = 0`, own((rows) => expect(rows).toEqual([{ n: 2 }]))],
  [`SELECT * FROM (SELECT * FROM ${R}) WHERE ${RL_LEAK} = 0`, ownCount(2)],
  [`WITH r AS (SELECT * FROM ${R}) SELECT * FROM r WHERE ${RL_LEAK} = 0`, ownCount(2)],
  [
    `SELECT sum(total) AS n, sum(passed) AS p FROM ratelimits_per_minute_v1 WHERE ${RL_LEAK} = 0`,
    own((rows) => expect(rows).toEqual([{ n: 2, p: 1 }])),
  ],
  [
    `SELECT sum(total) AS n FROM ratelimits_per_hour_v1 WHERE ${RL_LEAK} = 0`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  [
    `SELECT sum(total) AS n FROM ratelimits_per_day_v1 WHERE ${RL_LEAK} = 0`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  [
    `SELECT namespace_id, passed, total FROM ratelimits_per_month_v1 WHERE ${RL_LEAK} = 0`,
    own((rows) => expect(rows).toEqual([{ namespace_id: "rlns_mine", passed: 1, total: 2 }])),
  ],
  [
    `SELECT a.identifier FROM ${R} AS a JOIN ${R} AS b USING request_id WHERE toInt64(if(b.workspace_id = 'ws_mine', '0', concat(b.workspace_id, b.namespace_id))) = 0`,
    ownCount(2),
  ],
  [
    `SELECT identifier, count() AS n FROM ${R} GROUP BY identifier HAVING toInt64(if(identifier = 'user_mine', '0', identifier)) = 0`,
    own((rows) => expect(rows).toEqual([{ identifier: "user_mine", n: 2 }])),
  ],
  [
    `SELECT count() AS n FROM ${R} WHERE identifier IN (SELECT identifier FROM ${R} WHERE ${RL_LEAK} = 0)`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  [
    `SELECT * FROM ${R} WHERE toInt64(if(override_id = 'key_other', concat(override_id, request_id), '0')) = 0`,
    ownCount(2),
  ],
  [`SELECT intDiv(1, if(workspace_id = 'ws_other', 0, 1)) AS n FROM ${R}`, ownCount(2)],
  [`SELECT * FROM ${R} WHERE modulo(1, if(namespace_id = 'id_other', 0, 1)) = 0`, ownCount(2)],
  // Expressions that throw on the caller's own rows: the class of the failure, never ClickHouse's text.
  [`SELECT toInt64(concat(namespace_id, identifier)) AS n FROM ${R}`, failed("conversion_failed")],
  [`SELECT intDiv(1, if(workspace_id = 'ws_mine', 0, 1)) AS n FROM ${R}`, failed("arithmetic_error")],
  [`SELECT * FROM ${R} WHERE match(identifier, '(unclosed')`, failed("invalid_regex")],
  [`SELECT ratelimits_raw.workspace_id FROM ${R}`, failed("query_invalid")],
  [
    `SELECT * FROM ${R} WHERE throwIf(workspace_id != 'ws_mine') = 0`,
    { refused: /The function 'throwIf' is not allowed/ },
  ],
];

export interface ProbeAnswer {
  rows: Record<string, unknown>[] | undefined;
  problem: { reason: ErrorReason | undefined; message: string } | undefined;
}

/** Checks one probe's answer: nothing of the other workspace anywhere, and what the probe expects. */
export function checkProbe(answer: ProbeAnswer, expected: ProbeExpect): void {
  const seen = JSON.stringify(answer);
  for (const secret of OTHER) expect(seen).not.toContain(secret);
  if ("ownOrFailed" in expected) {
    if (answer.problem) {
      expect(answer.problem.reason).toBe(ErrorReason.INVALID_ANALYTICS_QUERY);
      expect(answer.problem.message).toMatch(
        /^The query failed while (running|being planned)\b.* \(code: [a-z_]+\)\.$/,
      );
    } else {
      for (const row of answer.rows ?? []) expect(row["workspace_id"] ?? "ws_mine").toBe("ws_mine");
    }
    return;
  }
  if ("own" in expected) {
    expect(answer.problem, `expected rows, got ${answer.problem?.message}`).toBeUndefined();
    for (const row of answer.rows ?? []) {
      if ("workspace_id" in row) expect(row["workspace_id"]).toBe("ws_mine");
    }
    expected.own(answer.rows ?? []);
    return;
  }
  expect(answer.rows, "expected a refusal").toBeUndefined();
  expect(answer.problem?.reason).toBe(ErrorReason.INVALID_ANALYTICS_QUERY);
  if ("refused" in expected) {
    expect(answer.problem?.message).toMatch(expected.refused);
    return;
  }
  // Latchkey's own message and code, not ClickHouse's text: not even the caller's own values are quoted.
  expect(answer.problem?.message).toBe(`${FAILURE_MESSAGES[expected.failed]} (code: ${expected.failed}).`);
}
