import { rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClickHouseClient, createClient } from "@clickhouse/client";
import { createClient as createConnectClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf, rejection } from "../testing/clickhouse.ts";
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
import { migrateClickHouse } from "./migrations.ts";
import { ISOLATION_SETTINGS } from "./query-settings.ts";
import { BARRIER, checkRawQuery } from "./raw-query.ts";
import { analyticsRoutes } from "./routes.ts";
import { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";

/**
 * The error-channel probes against a current ClickHouse, in process through
 * chdb (ClickHouse 26.x), where predicate push-down, merged filters and
 * multi-step PREWHERE are on by default. chdb is about 540 MB, so it is not a
 * dependency of the repository: services/analytics/test-current-clickhouse.sh
 * installs it outside it and runs this file with LATCHKEY_CHDB_DIR set. Without
 * chdb every test here is skipped, saying so.
 */

type CreateChdbConnection = (options: { path: string }) => unknown;

/** chdb's module, named in a variable: it is installed outside the repository, where no checker resolves it. */
const CHDB_CONNECTION = "chdb/connection";

function loadChdb(): CreateChdbConnection | undefined {
  const dir = process.env["LATCHKEY_CHDB_DIR"];
  try {
    const require = createRequire(dir ? join(dir, "package.json") : import.meta.url);
    return (require(CHDB_CONNECTION) as { createChdbConnection: CreateChdbConnection }).createChdbConnection;
  } catch {
    return undefined;
  }
}

const createChdbConnection = loadChdb();
const SKIPPED =
  "chdb is not installed: run services/analytics/test-current-clickhouse.sh to test against a current ClickHouse";

/** chdb's data directory, this run's own. */
const path = join(tmpdir(), `latchkey-chdb-${process.pid}-${Date.now()}`);
let client: ClickHouseClient;
let service: ReturnType<typeof createConnectClient<typeof AnalyticsService>>;
/** This server's defaults of the isolation settings: chdb keeps a query's settings for the next one. */
let defaults: Record<string, string>;
let version: string;

beforeAll(async () => {
  if (!createChdbConnection) return;
  const connection = createChdbConnection({ path });
  const boot = createClient({ connection } as Parameters<typeof createClient>[0]);
  await boot.command({ query: "CREATE DATABASE IF NOT EXISTS latchkey" });
  client = createClient({
    connection,
    database: "latchkey",
    clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
  } as Parameters<typeof createClient>[0]);
  const rs = await client.query({
    query: `SELECT version() AS version, name, default FROM system.settings WHERE name IN (${Object.keys(
      ISOLATION_SETTINGS,
    )
      .map((n) => `'${n}'`)
      .join(", ")})`,
    format: "JSONEachRow",
  });
  const rows = await rs.json<{ version: string; name: string; default: string }>();
  version = rows[0]?.version ?? "unknown";
  defaults = Object.fromEntries(rows.map((r) => [r.name, r.default]));
  await migrateClickHouse(client);
  // The fallback runner: readonly=2 and every setting sent with each query.
  const store = new ClickHouseAnalyticsStore(client, { client, mode: "fallback" });
  await store.insertVerifications(probeRows());
  await store.insertRatelimits(ratelimitProbeRows());
  const deps: AnalyticsDeps = { store, log: createLogger("analytics", "silent"), ready: () => store.ping() };
  service = createConnectClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
}, 120_000);
afterAll(async () => {
  await client?.close();
  await rm(path, { recursive: true, force: true });
});

/** The rendered SQL of `query` for ws_mine, straight to ClickHouse: its rows or its error text. */
async function direct(query: string, settings: Record<string, string>, barrier = true): Promise<string> {
  let { sql } = checkRawQuery(query, { workspaceId: "ws_mine", apiIds: undefined });
  if (!barrier) sql = sql.replaceAll(` ${BARRIER}`, "");
  try {
    const rs = await client.query({ query: sql, format: "JSONEachRow", clickhouse_settings: settings });
    return JSON.stringify(await rs.json());
  } catch (err) {
    return (err as Error).message;
  }
}

const leaks = (seen: string) => OTHER.some((secret) => seen.includes(secret));
const shown = (q: string) => (q.length > 100 ? `${q.slice(0, 97)}...` : q);
const rowProbes = ERROR_PROBES.filter(([, e]) => "own" in e || "ownOrFailed" in e).map(([q]) => q);

describe("a current ClickHouse (chdb): the rendered SQL", () => {
  it("is a current release with push-down on by default", async (ctx) => {
    if (!createChdbConnection) return ctx.skip(SKIPPED);
    expect(Number(version.split(".")[0])).toBeGreaterThanOrEqual(24);
    expect(defaults["enable_optimize_predicate_expression"]).toBe("1");
    expect(defaults["query_plan_filter_push_down"]).toBe("1");
  });

  it("quotes another workspace's rows in its errors without BARRIER and without the isolation settings (what the probes test)", async (ctx) => {
    if (!createChdbConnection) return ctx.skip(SKIPPED);
    const leaked: string[] = [];
    for (const q of rowProbes) if (leaks(await direct(q, defaults, false))) leaked.push(q);
    expect(leaked.length).toBeGreaterThanOrEqual(10);
  });

  it.for(rowProbes.map((q, i) => [i, shown(q), q] as const))(
    "keeps the caller's expressions on its rows with BARRIER alone, every optimization at its default: #%i %s",
    async ([, , q], ctx) => {
      if (!createChdbConnection) return ctx.skip(SKIPPED);
      expect(leaks(await direct(q, defaults))).toBe(false);
    },
  );

  it.for(rowProbes.map((q, i) => [i, shown(q), q] as const))(
    "keeps the caller's expressions on its rows with the isolation settings alone, without BARRIER: #%i %s",
    async ([, , q], ctx) => {
      if (!createChdbConnection) return ctx.skip(SKIPPED);
      expect(leaks(await direct(q, { ...ISOLATION_SETTINGS }, false))).toBe(false);
    },
  );
});

describe("a current ClickHouse (chdb): through the service", () => {
  const mine = callerOf("ws_mine", "api.*.read_analytics");
  it.for(ERROR_PROBES.map(([q, e], i) => [i, shown(q), q, e] as const))(
    "#%i %s",
    async ([, , query, expected], ctx) => {
      if (!createChdbConnection) return ctx.skip(SKIPPED);
      let answer: ProbeAnswer;
      try {
        const rows = (await service.getVerifications({ caller: mine, query })).rows;
        answer = { rows: rows as ProbeAnswer["rows"], problem: undefined };
      } catch {
        answer = {
          rows: undefined,
          problem: await rejection(service.getVerifications({ caller: mine, query })),
        };
      }
      checkProbe(answer, expected);
    },
  );
});

describe("a current ClickHouse (chdb): getRatelimits through the service", () => {
  const mine = callerOf("ws_mine", "ratelimit.*.read_analytics");
  it.for(RATELIMIT_PROBES.map(([q, e], i) => [i, shown(q), q, e] as const))(
    "#%i %s",
    async ([, , query, expected], ctx) => {
      if (!createChdbConnection) return ctx.skip(SKIPPED);
      let answer: ProbeAnswer;
      try {
        const rows = (await service.getRatelimits({ caller: mine, query })).rows;
        answer = { rows: rows as ProbeAnswer["rows"], problem: undefined };
      } catch {
        answer = {
          rows: undefined,
          problem: await rejection(service.getRatelimits({ caller: mine, query })),
        };
      }
      checkProbe(answer, expected);
    },
  );

  it.for(RATELIMIT_PROBES.filter(([, e]) => "own" in e).map(([q], i) => [i, shown(q), q] as const))(
    "keeps the caller's expressions on its rows with BARRIER alone: #%i %s",
    async ([, , q], ctx) => {
      if (!createChdbConnection) return ctx.skip(SKIPPED);
      const { sql } = checkRawQuery(q, { workspaceId: "ws_mine" }, 10_000, "ratelimits");
      let seen: string;
      try {
        const rs = await client.query({ query: sql, format: "JSONEachRow", clickhouse_settings: defaults });
        seen = JSON.stringify(await rs.json());
      } catch (err) {
        seen = (err as Error).message;
      }
      expect(leaks(seen)).toBe(false);
    },
  );
});
