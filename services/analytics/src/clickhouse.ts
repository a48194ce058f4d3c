import { type ClickHouseClient, ClickHouseLogLevel, createClient } from "@clickhouse/client";

/**
 * Settings every query runs with. 64-bit integers as JSON numbers: 18.16
 * quotes them by default and current ClickHouse does not; every count and ms
 * timestamp kept here fits in 2^53. A batch's dedupe check lists thousands of
 * request ids, more than the default 256 KiB query size.
 */
const settings = {
  output_format_json_quote_64bit_integers: 0,
  max_query_size: "10000000",
} as const;

/**
 * A client for CLICKHOUSE_URL. The URL's path names the database
 * (http://host:8123/analytics); without one it is `latchkey`. The database is
 * created if it is missing.
 */
export async function openClickHouse(
  url: string,
  options: { requestTimeoutMs?: number } = {},
): Promise<{ client: ClickHouseClient; database: string }> {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.replace(/^\/+|\/+$/g, "")) || "latchkey";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) throw new Error(`'${database}' is not a database name`);
  parsed.pathname = "/";
  const base = parsed.toString();
  const common = {
    url: base,
    request_timeout: options.requestTimeoutMs ?? 30_000,
    clickhouse_settings: settings,
    // Failures are logged once by the caller, with context; the client's own error log would repeat them.
    log: { level: ClickHouseLogLevel.OFF },
  };
  const bootstrap = createClient(common);
  try {
    await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
  } finally {
    await bootstrap.close();
  }
  return { client: createClient({ ...common, database }), database };
}

/** A ClickHouse string literal: backslash and quote escaped, as 18.16 has no query parameters. */
export function quote(value: string): string {
  return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** A ClickHouse array literal of strings. */
export const quoteList = (values: readonly string[]) => `[${values.map(quote).join(", ")}]`;

/** An integer literal, refusing anything that is not a safe integer. */
export function int(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`${value} is not a safe integer`);
  return String(value);
}

/**
 * Where tenants' raw queries run. `user`: a client for CLICKHOUSE_QUERY_URL, the
 * read-only ClickHouse user whose profile holds every limit (readonly=1: the
 * client may not change a setting, so it sends none). `fallback`: the
 * ingest/migrations client of CLICKHOUSE_URL, each query sent with readonly=2
 * and the limits as settings (safe, but only as strong as the query checks:
 * that user can read every database).
 */
export interface QueryRunner {
  client: ClickHouseClient;
  mode: "user" | "fallback";
}

/** A client for CLICKHOUSE_QUERY_URL: its path names the database (default `latchkey`); nothing is created. */
export function openClickHouseQueryUser(
  url: string,
  options: { requestTimeoutMs?: number } = {},
): QueryRunner {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.replace(/^\/+|\/+$/g, "")) || "latchkey";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) throw new Error(`'${database}' is not a database name`);
  parsed.pathname = "/";
  const client = createClient({
    url: parsed.toString(),
    database,
    request_timeout: options.requestTimeoutMs ?? 30_000,
    log: { level: ClickHouseLogLevel.OFF },
  });
  return { client, mode: "user" };
}
