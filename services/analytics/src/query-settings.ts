import type { ClickHouseClient, ClickHouseSettings } from "@clickhouse/client";
import { quote } from "./clickhouse.ts";
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from "./store/analytics-store.ts";

/**
 * Settings that keep ClickHouse from evaluating a tenant's expressions beside
 * the views' workspace filter, on other workspaces' rows: predicate push-down
 * into subqueries (the old interpreter's, and the query plan's, which ignores
 * enable_optimize_predicate_expression), merging adjacent filters, and moving
 * conditions into PREWHERE, where they run together (and reordered) before
 * anything is filtered. raw-query.ts's BARRIER already keeps every tenant
 * expression above the filtered subquery; these are the second wall, pinned in
 * the query user's profile (scripts/clickhouse-users.sh) and sent with each
 * query where the server knows the setting and lets it be sent.
 * short_circuit_function_evaluation is not here: ClickHouse 26.7 evaluated a
 * merged PREWHERE whole even with force_enable.
 */
export const ISOLATION_SETTINGS: Readonly<Record<string, string>> = {
  // 18.16 and later.
  enable_optimize_predicate_expression: "0",
  optimize_move_to_prewhere: "0",
  // Later releases (each sent only where system.settings lists it).
  enable_optimize_predicate_expression_to_final_subquery: "0",
  allow_push_predicate_when_subquery_contains_with: "0",
  optimize_move_to_prewhere_if_final: "0",
  move_all_conditions_to_prewhere: "0",
  enable_multiple_prewhere_read_steps: "0",
  allow_reorder_prewhere_conditions: "0",
  query_plan_filter_push_down: "0",
  query_plan_merge_filters: "0",
  query_plan_optimize_prewhere: "0",
  // An exception after the first rows is written as a JSON row otherwise (23.8 and later).
  http_write_exception_in_output_format: "0",
};

/** Threads one analytics query may use (its share of the server's cores). */
export const QUERY_MAX_THREADS = 2;
/** Memory one analytics query may use. */
export const QUERY_MAX_MEMORY = 1_000_000_000;

/** The limits a query is sent when the server lets it change them (the fallback client, or a user without readonly=1). */
export function limitSettings(limits: QueryLimits, maxRows: number): Record<string, string> {
  return {
    max_execution_time: String(Math.ceil(limits.timeoutMs / 1000)),
    max_result_rows: String(maxRows + 1),
    max_result_bytes: String(limits.maxBytes * 8),
    result_overflow_mode: "throw",
    max_memory_usage: String(QUERY_MAX_MEMORY),
    max_threads: String(QUERY_MAX_THREADS),
    cancel_http_readonly_queries_on_client_close: "1",
  };
}

/** The settings of the server as the raw queries' user sees them, read once. */
export interface ServerProfile {
  version: string;
  /** The user's readonly: 1 refuses any setting a query sends with another value than its own. */
  readonly: number;
  /** Current values of the settings above that this server knows. */
  values: ReadonlyMap<string, string>;
}

const PROBED = [
  ...Object.keys(ISOLATION_SETTINGS),
  ...Object.keys(limitSettings(DEFAULT_QUERY_LIMITS, 0)),
  "readonly",
];

/** Reads the server's version and the settings above as `client`'s user: one query. */
export async function readServerProfile(client: ClickHouseClient): Promise<ServerProfile> {
  const rs = await client.query({
    query: `SELECT version() AS version, name, value FROM system.settings WHERE name IN (${PROBED.map(quote).join(", ")})`,
    format: "JSONEachRow",
  });
  const rows = await rs.json<{ version: string; name: string; value: string }>();
  const values = new Map(rows.map((r) => [r.name, r.value]));
  return { version: rows[0]?.version ?? "unknown", readonly: Number(values.get("readonly") ?? 0), values };
}

/**
 * The settings a raw query is sent, and the isolation settings it cannot be
 * sent because the user is readonly=1 and its profile holds another value
 * (ClickHouse refuses a changed setting in readonly mode, and an unknown one
 * anywhere, so only what the server lists is sent). `wait_end_of_query` is an
 * HTTP parameter, not a setting, so readonly=1 allows it: the server holds the
 * answer until the query has finished, and an error anywhere in it comes back
 * as an error status, never as a row after rows already sent.
 */
export function querySettings(
  profile: ServerProfile,
  mode: "user" | "fallback",
  limits: QueryLimits,
  maxRows: number,
): { settings: ClickHouseSettings; unpinned: string[] } {
  const canChange = mode === "fallback" || profile.readonly !== 1;
  const settings: Record<string, string> = { wait_end_of_query: "1" };
  const unpinned: string[] = [];
  const add = (name: string, value: string) => {
    if (!profile.values.has(name)) return;
    if (canChange || profile.values.get(name) === value) settings[name] = value;
    else if (name in ISOLATION_SETTINGS) unpinned.push(`${name}=${value}`);
  };
  // readonly=2: the query reads only, and may still be sent the settings below.
  if (canChange) settings["readonly"] = "2";
  for (const [name, value] of Object.entries(ISOLATION_SETTINGS)) add(name, value);
  if (canChange) for (const [name, value] of Object.entries(limitSettings(limits, maxRows))) add(name, value);
  return { settings: settings as ClickHouseSettings, unpinned };
}
