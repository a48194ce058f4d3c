import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger, ErrorReason } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callerOf,
  createQueryUserClickHouse,
  rejection,
  type TestClickHouse,
} from "../testing/clickhouse.ts";
import {
  checkProbe,
  ERROR_PROBES,
  OTHER,
  type ProbeAnswer,
  probeRows,
  RATELIMIT_PROBES,
  ratelimitProbeRows,
} from "../testing/raw-query-probes.ts";
import type { AnalyticsDeps } from "./deps.ts";
import { checkRawQuery } from "./raw-query.ts";
import { analyticsRoutes } from "./routes.ts";
import { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";

/**
 * A hostile tenant's raw queries, through the analytics service, against real
 * ClickHouse holding two workspaces, run as the read-only query user
 * (scripts/clickhouse-users.sh). Each attempt is either refused with
 * INVALID_ANALYTICS_QUERY whose message names the problem, or answered with
 * the caller's own rows only; which one is asserted per attempt, and no answer
 * or message may hold anything of the other workspace.
 */

let db: TestClickHouse;
let client: ReturnType<typeof createClient<typeof AnalyticsService>>;
const mine = callerOf("ws_mine", "api.*.read_analytics");

beforeAll(async () => {
  const ch = await createQueryUserClickHouse(1);
  db = ch;
  const store = new ClickHouseAnalyticsStore(ch.client, ch.runner);
  const deps: AnalyticsDeps = { store, log: createLogger("analytics", "silent"), ready: () => store.ping() };
  client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
  await store.insertVerifications(probeRows());
  await store.insertRatelimits(ratelimitProbeRows());
});
afterAll(async () => {
  await db.drop();
});

type Expect = { refused: RegExp } | { own: (rows: unknown[]) => void };
const refused = (why: RegExp): Expect => ({ refused: why });
const own = (check: (rows: unknown[]) => void = () => {}): Expect => ({ own: check });
const ownCount = (n: number) => own((rows) => expect(rows).toHaveLength(n));

const NOT_A_VIEW = /is not a table analytics queries may read/;
const QUALIFIED = /Database-qualified table names are not allowed/;
const TABLE_FUNCTION = /Table functions are not allowed/;
const FUNCTION = /The function '.+' is not allowed/;
const SYNTAX = /not in the supported SQL at line \d+, column \d+/;
const COMMA = /Comma joins/;
/** ClickHouse could not plan the rendered query: Latchkey's message, not ClickHouse's. */
const CLICKHOUSE = /^The query failed while being planned: .* \(code: query_invalid\)\.$/;

const V = "key_verifications_v1";

const corpus: [string, Expect][] = [
  // The reported escapes and their spellings.
  [
    "SELECT * FROM (SELECT 1 AS x) AS array JOIN key_verifications_raw AS r ON 1 = 1 LIMIT 50",
    refused(NOT_A_VIEW),
  ],
  ["SELECT * FROM (SELECT 1 AS x) AS array JOIN `system`.tables AS r ON 1 = 1", refused(QUALIFIED)],
  ['SELECT * FROM (SELECT 1 AS x) AS array JOIN "system".columns AS r ON 1 = 1', refused(QUALIFIED)],
  ["SELECT * FROM (SELECT 1 AS x) AS array JOIN `system`.databases AS r ON 1 = 1", refused(QUALIFIED)],
  ["SELECT * FROM (SELECT 1) AS a, key_verifications_raw", refused(COMMA)],
  [`SELECT * FROM ${V}, key_verifications_raw`, refused(COMMA)],
  [`SELECT * FROM ${V} AS a, ${V} AS b`, refused(COMMA)],
  // Joins of every kind.
  [`SELECT * FROM ${V} CROSS JOIN key_verifications_raw`, refused(/CROSS JOIN is not allowed/)],
  [`SELECT * FROM ${V} CROSS JOIN ${V} AS b`, refused(/CROSS JOIN is not allowed/)],
  [`SELECT * FROM ${V} ARRAY JOIN tags AS t`, refused(/ARRAY JOIN is not allowed/)],
  [`SELECT * FROM ${V} LEFT ARRAY JOIN key_verifications_raw`, refused(/ARRAY JOIN is not allowed/)],
  [
    `SELECT * FROM ${V} ANY LEFT JOIN key_verifications_raw USING key_id`,
    refused(/ANY LEFT JOIN is not allowed/),
  ],
  [`SELECT * FROM ${V} ALL INNER JOIN ${V} AS b USING key_id`, refused(/ALL INNER JOIN is not allowed/)],
  [`SELECT * FROM ${V} ASOF JOIN key_verifications_raw USING key_id`, refused(/ASOF JOIN is not allowed/)],
  [
    `SELECT * FROM ${V} GLOBAL JOIN key_verifications_raw USING key_id`,
    refused(/GLOBAL JOIN is not allowed/),
  ],
  [`SELECT * FROM ${V} SEMI LEFT JOIN ${V} AS b USING key_id`, refused(/SEMI LEFT JOIN is not allowed/)],
  [`SELECT * FROM ${V} PASTE JOIN ${V} AS b`, refused(/PASTE JOIN is not allowed/)],
  [`SELECT * FROM ${V} JOIN ${V} AS b`, refused(/JOIN needs ON or USING/)],
  [`SELECT * FROM ${V} JOIN key_verifications_raw USING key_id`, refused(NOT_A_VIEW)],
  [`SELECT * FROM ${V} LEFT JOIN default.key_verifications_raw AS r USING key_id`, refused(QUALIFIED)],
  [`SELECT * FROM ${V} RIGHT OUTER JOIN key_verifications_per_hour USING key_id`, refused(NOT_A_VIEW)],
  [`SELECT * FROM ${V} FULL JOIN ratelimits_raw USING workspace_id`, refused(NOT_A_VIEW)],
  [`SELECT * FROM ${V} INNER JOIN schema_migrations ON 1 = 1`, refused(NOT_A_VIEW)],
  [
    `SELECT a.key_id, b.key_id AS k2 FROM ${V} AS a INNER JOIN ${V} AS b USING request_id`,
    own((rows) => expect(rows).toHaveLength(2)),
  ],
  [`SELECT a.workspace_id FROM ${V} AS a LEFT JOIN key_verifications_per_day_v1 AS d USING key_id`, own()],
  // Aliases named like keywords, and names that must be matched as ClickHouse reads them.
  [`SELECT * FROM ${V} AS array`, ownCount(2)],
  [`SELECT * FROM ${V} AS from`, ownCount(2)],
  [`SELECT * FROM ${V} AS \`join\` JOIN ${V} AS \`select\` USING request_id`, ownCount(2)],
  [`SELECT count() AS from FROM ${V}`, own((rows) => expect(rows).toEqual([{ from: 2 }]))],
  ["SELECT * FROM `key_verifications_v1`", ownCount(2)],
  ['SELECT * FROM "key_verifications_v1"', ownCount(2)],
  ["SELECT * FROM `key_verifications_raw`", refused(NOT_A_VIEW)],
  ['SELECT * FROM "key_verifications_raw"', refused(NOT_A_VIEW)],
  ["SELECT * FROM KEY_VERIFICATIONS_V1", refused(/case-sensitive: did you mean key_verifications_v1/)],
  ["SELECT * FROM Key_Verifications_Raw", refused(NOT_A_VIEW)],
  ["SELECT * FROM default.key_verifications_raw", refused(QUALIFIED)],
  [`SELECT * FROM default.${V}`, refused(QUALIFIED)],
  ["SELECT * FROM system.tables", refused(QUALIFIED)],
  ["SELECT * FROM SYSTEM.TABLES", refused(QUALIFIED)],
  ["SELECT * FROM `system`.`processes`", refused(QUALIFIED)],
  ["SELECT * FROM analytics.key_verifications_raw", refused(QUALIFIED)],
  ["SELECT * FROM latchkey.key_verifications_raw", refused(QUALIFIED)],
  ["SELECT * FROM latchkey_test_query_1.key_verifications_raw", refused(QUALIFIED)],
  ["SELECT * FROM `latchkey_test_query_1.key_verifications_raw`", refused(/Identifiers may hold only ASCII/)],
  ["SELECT * FROM `key_verifications_v1` . `x`", refused(SYNTAX)],
  ["SELECT * FROM key_verificаtions_v1", refused(SYNTAX)], // Cyrillic а
  ["SELECT * FROM `key_verificаtions_v1`", refused(/Identifiers may hold only ASCII/)],
  ["SELECT * FROM `key_verifications_v1\u200b`", refused(/Identifiers may hold only ASCII/)],
  ["SELECT * FROM `key\\_verifications_raw`", refused(NOT_A_VIEW)],
  ["SELECT * FROM `key_verifications_v1` AS `a.b`", refused(/Identifiers may hold only ASCII/)],
  [
    `SELECT workspace_id AS \`key_verifications_raw.workspace_id\` FROM ${V}`,
    refused(/Identifiers may hold only ASCII/),
  ],
  [
    `SELECT ${V}.workspace_id FROM ${V}`,
    own((rows) => expect(rows).toEqual([{ workspace_id: "ws_mine" }, { workspace_id: "ws_mine" }])),
  ],
  [`SELECT key_verifications_raw.workspace_id FROM ${V}`, refused(CLICKHOUSE)],
  [`SELECT default.key_verifications_raw.workspace_id FROM ${V}`, refused(/database-qualified table/)],
  [`SELECT system.tables.name FROM ${V}`, refused(/database-qualified table/)],
  // System tables and other tables of the database.
  ["SELECT * FROM system.one", refused(QUALIFIED)],
  ["SELECT * FROM one", refused(NOT_A_VIEW)],
  ["SELECT * FROM tables", refused(NOT_A_VIEW)],
  ["SELECT * FROM key_verifications_per_day", refused(NOT_A_VIEW)],
  ["SELECT * FROM key_verifications_per_hour_mv", refused(NOT_A_VIEW)],
  ["SELECT * FROM ratelimits_raw", refused(NOT_A_VIEW)],
  ["SELECT * FROM schema_migrations", refused(NOT_A_VIEW)],
  // Table functions.
  ["SELECT * FROM numbers(10)", refused(TABLE_FUNCTION)],
  ["SELECT * FROM system.numbers", refused(QUALIFIED)],
  ["SELECT * FROM remote('127.0.0.1', default.key_verifications_raw)", refused(TABLE_FUNCTION)],
  ["SELECT * FROM url('http://127.0.0.1:8123/?query=SELECT+1', CSV, 'a String')", refused(TABLE_FUNCTION)],
  ["SELECT * FROM file('/etc/passwd', CSV, 'a String')", refused(TABLE_FUNCTION)],
  ["SELECT * FROM cluster('default', system.one)", refused(TABLE_FUNCTION)],
  ["SELECT * FROM merge(currentDatabase(), '.*')", refused(TABLE_FUNCTION)],
  ["SELECT * FROM merge('.*', '^key')", refused(TABLE_FUNCTION)],
  ["SELECT * FROM input('a String')", refused(TABLE_FUNCTION)],
  ["SELECT * FROM s3('http://127.0.0.1/x', CSV)", refused(TABLE_FUNCTION)],
  ["SELECT * FROM jdbc('jdbc:x', 'y')", refused(TABLE_FUNCTION)],
  ["SELECT * FROM mysql('127.0.0.1:3306', 'db', 't', 'u', 'p')", refused(TABLE_FUNCTION)],
  ["SELECT * FROM dictionary('d')", refused(TABLE_FUNCTION)],
  [`SELECT * FROM ${V} JOIN numbers(10) AS n ON 1 = 1`, refused(TABLE_FUNCTION)],
  [`SELECT * FROM ${V} WHERE key_id IN (SELECT toString(number) FROM numbers(3))`, refused(TABLE_FUNCTION)],
  // Set operations.
  [
    `SELECT workspace_id FROM ${V} UNION ALL SELECT workspace_id FROM key_verifications_raw`,
    refused(NOT_A_VIEW),
  ],
  [`SELECT key_id FROM ${V} UNION ALL SELECT key_id FROM key_verifications_per_day_v1`, ownCount(4)],
  [
    `SELECT key_id FROM ${V} UNION SELECT key_id FROM ${V}`,
    refused(/UNION is not supported: write UNION ALL/),
  ],
  [
    `SELECT key_id FROM ${V} UNION DISTINCT SELECT key_id FROM ${V}`,
    refused(/UNION DISTINCT is not supported/),
  ],
  [
    `SELECT key_id FROM ${V} INTERSECT SELECT key_id FROM key_verifications_raw`,
    refused(/INTERSECT is not supported/),
  ],
  [`SELECT key_id FROM ${V} EXCEPT SELECT key_id FROM ${V}`, refused(/EXCEPT is not supported/)],
  [`(SELECT key_id FROM ${V}) UNION ALL (SELECT name FROM system.tables)`, refused(QUALIFIED)],
  // WITH.
  [
    `WITH r AS (SELECT * FROM ${V}) SELECT count() AS n FROM r`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  [`WITH r AS (SELECT * FROM key_verifications_raw) SELECT * FROM r`, refused(NOT_A_VIEW)],
  [
    `WITH key_verifications_raw AS (SELECT * FROM ${V}) SELECT workspace_id FROM key_verifications_raw`,
    ownCount(2),
  ],
  [
    `WITH ${V} AS (SELECT * FROM ${V} WHERE 1) SELECT count() AS n FROM ${V}`,
    own((rows) => expect(rows).toEqual([{ n: 2 }])),
  ],
  [
    `WITH 'ws_other' AS workspace_id SELECT * FROM ${V}`,
    refused(/WITH <expression> AS workspace_id is not allowed/),
  ],
  [`WITH (SELECT 1) AS x SELECT x FROM ${V}`, refused(/WITH <expression> AS x is not allowed/)],
  [`WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r`, refused(/WITH RECURSIVE is not allowed/)],
  [`WITH a AS (SELECT * FROM b), b AS (SELECT * FROM ${V}) SELECT * FROM a`, refused(NOT_A_VIEW)],
  [`WITH a AS (SELECT * FROM a) SELECT * FROM a`, refused(NOT_A_VIEW)],
  [`WITH a AS (SELECT 1), a AS (SELECT 2) SELECT * FROM a`, refused(/defined twice/)],
  // Subqueries in every clause.
  [`SELECT (SELECT count() FROM key_verifications_raw) AS n FROM ${V}`, refused(NOT_A_VIEW)],
  [`SELECT (SELECT count() FROM ${V}) AS n`, own((rows) => expect(rows).toEqual([{ n: 2 }]))],
  [`SELECT * FROM ${V} WHERE key_id IN (SELECT key_id FROM key_verifications_raw)`, refused(NOT_A_VIEW)],
  [`SELECT * FROM ${V} WHERE key_id IN key_verifications_raw`, refused(/alone would name a table/)],
  [`SELECT * FROM ${V} WHERE key_id IN (key_verifications_raw)`, refused(/alone would name a table/)],
  [
    `SELECT * FROM ${V} WHERE key_id IN ((default.key_verifications_raw))`,
    refused(/alone would name a table/),
  ],
  [`SELECT * FROM ${V} WHERE key_id NOT IN system.tables`, refused(/alone would name a table/)],
  [
    `SELECT * FROM ${V} WHERE key_id GLOBAL IN (SELECT key_id FROM ${V})`,
    refused(/GLOBAL IN is not allowed/),
  ],
  [`SELECT * FROM ${V} WHERE key_id IN (SELECT key_id FROM ${V})`, ownCount(2)],
  [`SELECT * FROM ${V} WHERE EXISTS (SELECT 1 FROM key_verifications_raw)`, refused(NOT_A_VIEW)],
  [
    `SELECT key_id, count() AS n FROM ${V} GROUP BY key_id HAVING n > (SELECT count() FROM key_verifications_raw)`,
    refused(NOT_A_VIEW),
  ],
  [`SELECT * FROM ${V} ORDER BY (SELECT count() FROM system.tables)`, refused(QUALIFIED)],
  [`SELECT * FROM ${V} JOIN (SELECT * FROM key_verifications_raw) AS r USING key_id`, refused(NOT_A_VIEW)],
  [`SELECT * FROM (SELECT * FROM (SELECT * FROM key_verifications_raw))`, refused(NOT_A_VIEW)],
  [`SELECT * FROM (SELECT * FROM (SELECT * FROM ${V}))`, ownCount(2)],
  // Dictionaries, settings, files, hosts, sleeping and throwing functions.
  [`SELECT dictGet('d', 'x', toUInt64(1)) FROM ${V}`, refused(FUNCTION)],
  [`SELECT dictGetString('d', 'x', toUInt64(1)) FROM ${V}`, refused(FUNCTION)],
  [`SELECT joinGet('key_verifications_raw', 'workspace_id', 1) FROM ${V}`, refused(FUNCTION)],
  [`SELECT hasColumnInTable('default', 'key_verifications_raw', 'x') FROM ${V}`, refused(FUNCTION)],
  [`SELECT getSetting('max_execution_time') FROM ${V}`, refused(FUNCTION)],
  [`SELECT currentDatabase() FROM ${V}`, refused(FUNCTION)],
  [`SELECT currentUser() FROM ${V}`, refused(FUNCTION)],
  [`SELECT hostName() FROM ${V}`, refused(FUNCTION)],
  [`SELECT version() FROM ${V}`, refused(FUNCTION)],
  [`SELECT sleep(3) FROM ${V}`, refused(FUNCTION)],
  [`SELECT sleepEachRow(1) FROM ${V}`, refused(FUNCTION)],
  [`SELECT throwIf(1) FROM ${V}`, refused(FUNCTION)],
  [`SELECT file('/etc/passwd') FROM ${V}`, refused(FUNCTION)],
  [`SELECT url('http://x') FROM ${V}`, refused(FUNCTION)],
  [`SELECT getEnv('HOME') FROM ${V}`, refused(FUNCTION)],
  [`SELECT range(1000000000) FROM ${V}`, refused(FUNCTION)],
  [`SELECT SLEEP(3) FROM ${V}`, refused(FUNCTION)],
  [`SELECT in(key_id, key_verifications_raw) FROM ${V}`, refused(FUNCTION)],
  [`SELECT globalIn(key_id, key_verifications_raw) FROM ${V}`, refused(FUNCTION)],
  [`SELECT count() OVER () FROM ${V}`, refused(/Window functions/)],
  // Clauses that change how or where the query runs.
  [`SELECT * FROM ${V} FINAL`, refused(/FINAL is not allowed/)],
  [`SELECT * FROM ${V} SAMPLE 0.5`, refused(/SAMPLE is not allowed/)],
  [`SELECT * FROM ${V} PREWHERE 1`, refused(/PREWHERE is not allowed/)],
  [`SELECT * FROM ${V} SETTINGS readonly = 0`, refused(/SETTINGS is not allowed/)],
  [
    `SELECT * FROM ${V} SETTINGS max_execution_time = 0, max_result_rows = 0`,
    refused(/SETTINGS is not allowed/),
  ],
  [`SELECT * FROM ${V} FORMAT TabSeparated`, refused(/FORMAT TabSeparated is not allowed/)],
  [`SELECT * FROM ${V} INTO OUTFILE '/tmp/x'`, refused(/INTO OUTFILE is not allowed/)],
  [`SELECT key_id, count() FROM ${V} GROUP BY key_id WITH TOTALS`, refused(/WITH TOTALS is not allowed/)],
  [`SELECT * FROM ${V} LIMIT 1 SETTINGS readonly = 0`, refused(/SETTINGS is not allowed/)],
  ["SET readonly = 0", refused(SYNTAX)],
  ["INSERT INTO key_verifications_raw SELECT * FROM key_verifications_raw", refused(SYNTAX)],
  ["DROP TABLE key_verifications_raw", refused(SYNTAX)],
  ["SHOW TABLES", refused(SYNTAX)],
  ["DESCRIBE TABLE key_verifications_raw", refused(SYNTAX)],
  ["EXPLAIN SELECT 1", refused(SYNTAX)],
  ["ATTACH TABLE x", refused(SYNTAX)],
  ["KILL QUERY WHERE 1", refused(SYNTAX)],
  ["OPTIMIZE TABLE key_verifications_raw FINAL", refused(SYNTAX)],
  ["SYSTEM RELOAD CONFIG", refused(SYNTAX)],
  // Comments and several statements.
  [`SELECT * FROM ${V} -- JOIN key_verifications_raw`, ownCount(2)],
  [`SELECT * FROM ${V} /* */ JOIN key_verifications_raw USING key_id`, refused(NOT_A_VIEW)],
  [`SELECT * FROM /* key_verifications_v1 */ key_verifications_raw`, refused(NOT_A_VIEW)],
  [`SELECT * FROM ${V} # JOIN key_verifications_raw`, refused(SYNTAX)],
  [`SELECT * FROM ${V} --\nJOIN key_verifications_raw USING key_id`, refused(NOT_A_VIEW)],
  [`SELECT * FROM ${V}; SELECT * FROM key_verifications_raw`, refused(/Only one statement/)],
  [`SELECT * FROM ${V};;`, ownCount(2)],
  [`SELECT * FROM ${V}; DROP TABLE key_verifications_raw`, refused(/Only one statement/)],
  // Strings, quotes and escapes that would end a literal in a naive rewrite.
  [`SELECT * FROM ${V} WHERE key_id = '\\' OR 1 = 1 --'`, ownCount(0)],
  [`SELECT * FROM ${V} WHERE key_id = 'x'' OR workspace_id != '''`, ownCount(0)],
  [`SELECT * FROM ${V} WHERE key_id = 'x\\' UNION ALL SELECT * FROM key_verifications_raw --'`, ownCount(0)],
  [`SELECT * FROM ${V} WHERE workspace_id = 'ws_other'`, ownCount(0)],
  [`SELECT * FROM ${V} WHERE workspace_id != 'ws_mine' OR 1 = 1`, ownCount(2)],
  [`SELECT * FROM ${V} WHERE key_space_id = 'api_other'`, ownCount(0)],
  // The alias shadows the column in this query only; the view's own filter is out of its reach.
  [`SELECT 'ws_mine' AS workspace_id, * FROM ${V} WHERE workspace_id = 'ws_other'`, ownCount(0)],
  [`SELECT * FROM ${V} WHERE key_id = {id:String}`, refused(/Query parameters are not supported/)],
  [`SELECT * FROM ${V} WHERE key_id = ?`, refused(/Query parameters are not supported/)],
  // Unicode and case tricks.
  ["sElEcT * fRoM key_verifications_v1 WhErE 1", ownCount(2)],
  ["SELECT * FROM key_verifications_v1 WHERE key_id = 'ключ'", ownCount(0)],
  ["SELECT * FROM key_verifications_v１", refused(SYNTAX)], // fullwidth digit
  ["ＳＥＬＥＣＴ * FROM key_verifications_v1", refused(SYNTAX)],
  ["SELECT * FROM key_verifications_v1\u00a0JOIN key_verifications_raw USING key_id", refused(SYNTAX)],
  ["SELECT * FROM \u202ekey_verifications_raw", refused(SYNTAX)],
  // Very long and deeply nested queries.
  [`SELECT ${"(".repeat(60)}1${")".repeat(60)} FROM ${V}`, refused(/nests deeper than 40 levels/)],
  [`SELECT ${"1 + ".repeat(1500)}1 FROM ${V}`, refused(/more than 2000 words/)],
  // A chain of one operator is one level of nesting: rendered flat, it runs over the caller's rows only.
  [
    `SELECT ${"1 + ".repeat(300)}1 AS n FROM ${V}`,
    own((rows) => expect(rows).toEqual([{ n: 301 }, { n: 301 }])),
  ],
  [`SELECT ${"(1 + ".repeat(60)}1${")".repeat(60)} AS n FROM ${V}`, refused(/nests deeper than 40 levels/)],
  [`SELECT * FROM ${V} WHERE key_id = '${"x".repeat(20_000)}'`, refused(/longer than 10000 characters/)],
  [
    `SELECT * FROM ${"(SELECT * FROM ".repeat(30)}${V}${")".repeat(30)}`,
    refused(/nests deeper than 40 levels/),
  ],
  [
    `SELECT count() AS n FROM ${Array.from({ length: 17 }, (_, i) => `${V} AS t${i}`).join(" JOIN ")} USING request_id`,
    refused(/JOIN needs ON or USING/),
  ],
  [
    `SELECT count() AS n FROM ${V} AS t0 ${Array.from({ length: 16 }, (_, i) => `JOIN ${V} AS t${i + 1} USING request_id`).join(" ")}`,
    refused(/reads more than 16 tables/),
  ],
  [
    `WITH a AS (SELECT * FROM ${V} JOIN ${V} AS x USING request_id JOIN ${V} AS y USING request_id JOIN ${V} AS z USING request_id) SELECT count() FROM a JOIN a AS b USING request_id JOIN a AS c USING request_id JOIN a AS d USING request_id JOIN a AS e USING request_id`,
    refused(/reads more than 16 tables/),
  ],
  ["", refused(/The query is empty/)],
  ["   ", refused(/The query is empty/)],
];

describe("raw analytics queries against a hostile tenant (real ClickHouse, read-only query user)", () => {
  it("holds at least 100 escape attempts", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(100);
  });

  it.each(corpus.map(([q, e], i) => [i, q.length > 120 ? `${q.slice(0, 117)}...` : q, q, e] as const))(
    "#%i %s",
    async (_i, _shown, query, expected) => {
      let answer: unknown[] | undefined;
      let problem: { reason: ErrorReason | undefined; message: string } | undefined;
      try {
        answer = (await client.getVerifications({ caller: mine, query })).rows;
      } catch {
        problem = await rejection(client.getVerifications({ caller: mine, query }));
      }
      const seen = JSON.stringify(answer ?? problem);
      for (const secret of OTHER) expect(seen).not.toContain(secret);
      if ("refused" in expected) {
        expect(answer, "expected a refusal").toBeUndefined();
        expect(problem?.reason).toBe(ErrorReason.INVALID_ANALYTICS_QUERY);
        expect(problem?.message).toMatch(expected.refused);
      } else {
        expect(problem, `expected rows, got ${problem?.message}`).toBeUndefined();
        for (const row of (answer ?? []) as Record<string, unknown>[]) {
          if ("workspace_id" in row) expect(row["workspace_id"]).toBe("ws_mine");
        }
        expected.own(answer ?? []);
      }
    },
  );
});

/** The caller's rows, or the reason and message of the refusal. */
async function ask(query: string): Promise<ProbeAnswer> {
  try {
    return {
      rows: (await client.getVerifications({ caller: mine, query })).rows as ProbeAnswer["rows"],
      problem: undefined,
    };
  } catch {
    return { rows: undefined, problem: await rejection(client.getVerifications({ caller: mine, query })) };
  }
}

describe("raw analytics queries that try to read another workspace through errors (real ClickHouse, query user)", () => {
  it.each(ERROR_PROBES.map(([q, e], i) => [i, q.length > 120 ? `${q.slice(0, 117)}...` : q, q, e] as const))(
    "#%i %s",
    async (_i, _shown, query, expected) => {
      checkProbe(await ask(query), expected);
    },
  );
});

describe("the rendered SQL with predicate push-down on (18.16's enable_optimize_predicate_expression=1, current releases' default)", () => {
  // Straight to ClickHouse as the ingest user, without the service's settings: the views' BARRIER alone
  // keeps the caller's expressions above the workspace filter.
  it.each(
    ERROR_PROBES.filter(([, e]) => "own" in e).map(
      ([q], i) => [i, q.length > 120 ? `${q.slice(0, 117)}...` : q, q] as const,
    ),
  )("#%i %s", async (_i, _shown, query) => {
    const { sql } = checkRawQuery(query, { workspaceId: "ws_mine", apiIds: undefined });
    let seen: string;
    try {
      const rs = await db.client.query({
        query: sql,
        format: "JSONEachRow",
        clickhouse_settings: { enable_optimize_predicate_expression: 1 },
      });
      seen = JSON.stringify(await rs.json());
    } catch (err) {
      seen = (err as Error).message;
    }
    for (const secret of OTHER) expect(seen).not.toContain(secret);
  });
});

/** The caller's rate-limit rows through getRatelimits, or the reason and message of the refusal. */
async function askRatelimits(query: string, caller = mineRatelimits): Promise<ProbeAnswer> {
  try {
    return {
      rows: (await client.getRatelimits({ caller, query })).rows as ProbeAnswer["rows"],
      problem: undefined,
    };
  } catch {
    return { rows: undefined, problem: await rejection(client.getRatelimits({ caller, query })) };
  }
}

const mineRatelimits = callerOf("ws_mine", "ratelimit.*.read_analytics");
const R = "ratelimits_v1";

/** What getRatelimits must refuse: every table but its five views, the verification views included. */
const RATELIMIT_CORPUS: [string, RegExp][] = [
  ["SELECT * FROM ratelimits_raw", NOT_A_VIEW],
  ["SELECT * FROM ratelimits_per_hour", NOT_A_VIEW],
  ["SELECT * FROM ratelimits_per_day", NOT_A_VIEW],
  ["SELECT * FROM `ratelimits_raw`", NOT_A_VIEW],
  ["SELECT * FROM default.ratelimits_raw", QUALIFIED],
  [`SELECT * FROM default.${R}`, QUALIFIED],
  ["SELECT * FROM system.tables", QUALIFIED],
  [`SELECT * FROM ${V}`, NOT_A_VIEW],
  [`SELECT * FROM ${R} JOIN key_verifications_per_day_v1 USING workspace_id`, NOT_A_VIEW],
  [`SELECT * FROM ${R} JOIN ratelimits_raw USING request_id`, NOT_A_VIEW],
  [`SELECT * FROM ${R}, ratelimits_raw`, COMMA],
  [`SELECT * FROM ${R} ARRAY JOIN ratelimits_raw`, /ARRAY JOIN is not allowed/],
  [`SELECT * FROM remote('127.0.0.1', default, ratelimits_raw)`, TABLE_FUNCTION],
  [`SELECT * FROM ${R} FINAL`, /FINAL is not allowed/],
  [`SELECT * FROM ${R} SETTINGS readonly = 0`, /SETTINGS is not allowed/],
  [`SELECT * FROM ${R}; DROP TABLE ratelimits_raw`, /Only one statement|not in the supported SQL/],
  ["SELECT * FROM RATELIMITS_V1", /case-sensitive: did you mean ratelimits_v1/],
  [`SELECT file('/etc/passwd') FROM ${R}`, FUNCTION],
  [
    `SELECT * FROM ${R} WHERE identifier = {p:String}`,
    /parameters are not supported|not in the supported SQL/,
  ],
];

describe("getRatelimits' raw queries against a hostile tenant (real ClickHouse, read-only query user)", () => {
  it.each(RATELIMIT_CORPUS.map(([q, e], i) => [i, q, e] as const))(
    "refuses #%i %s",
    async (_i, query, why) => {
      const answer = await askRatelimits(query);
      checkProbe(answer, { refused: why });
    },
  );

  it.each(
    RATELIMIT_PROBES.map(([q, e], i) => [i, q.length > 120 ? `${q.slice(0, 117)}...` : q, q, e] as const),
  )("probe #%i %s", async (_i, _shown, query, expected) => {
    checkProbe(await askRatelimits(query), expected);
  });

  it("restricts a root key reading some namespaces to their rows, whatever the query names", async () => {
    const some = callerOf("ws_mine", "ratelimit.rlns_nothing.read_analytics");
    const none = await askRatelimits(`SELECT count() AS n FROM ${R} WHERE namespace_id = 'rlns_mine'`, some);
    expect(none).toEqual({ rows: [{ n: 0 }], problem: undefined });
    const mineOnly = callerOf("ws_mine", "ratelimit.rlns_mine.read_analytics");
    const rows = await askRatelimits(
      `SELECT namespace_id, count() AS n FROM ${R} GROUP BY namespace_id`,
      mineOnly,
    );
    expect(rows).toEqual({ rows: [{ namespace_id: "rlns_mine", n: 2 }], problem: undefined });
    const denied = await askRatelimits(
      `SELECT count() AS n FROM ${R}`,
      callerOf("ws_mine", "api.*.read_analytics"),
    );
    expect(denied.problem?.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
  });

  it.each(
    RATELIMIT_PROBES.filter(([, e]) => "own" in e).map(
      ([q], i) => [i, q.length > 120 ? `${q.slice(0, 117)}...` : q, q] as const,
    ),
  )("keeps probe #%i within the caller's rows with predicate push-down on: %s", async (_i, _shown, query) => {
    const { sql } = checkRawQuery(query, { workspaceId: "ws_mine" }, 10_000, "ratelimits");
    let seen: string;
    try {
      const rs = await db.client.query({
        query: sql,
        format: "JSONEachRow",
        clickhouse_settings: { enable_optimize_predicate_expression: 1 },
      });
      seen = JSON.stringify(await rs.json());
    } catch (err) {
      seen = (err as Error).message;
    }
    for (const secret of OTHER) expect(seen).not.toContain(secret);
  });
});
