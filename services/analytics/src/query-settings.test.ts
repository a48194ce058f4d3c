import { describe, expect, it } from "vitest";
import { ISOLATION_SETTINGS, querySettings, type ServerProfile } from "./query-settings.ts";
import { DEFAULT_QUERY_LIMITS } from "./store/analytics-store.ts";

/** 18.16 as the query user of scripts/clickhouse-users.sh sees it: readonly=1, its two isolation settings pinned. */
const v18: ServerProfile = {
  version: "18.16.1",
  readonly: 1,
  values: new Map([
    ["readonly", "1"],
    ["enable_optimize_predicate_expression", "0"],
    ["optimize_move_to_prewhere", "0"],
    ["max_threads", "2"],
    ["max_execution_time", "10"],
  ]),
};

/** A current server whose query user's profile predates the isolation settings: their defaults, readonly=1. */
const current = (readonly: number): ServerProfile => ({
  version: "26.7.2.1",
  readonly,
  values: new Map([
    ["readonly", String(readonly)],
    ...Object.keys(ISOLATION_SETTINGS).map((name) => [name, "1"] as [string, string]),
    ["optimize_move_to_prewhere_if_final", "0"],
    ["max_threads", "auto(2)"],
    ["cancel_http_readonly_queries_on_client_close", "0"],
  ]),
});

describe("querySettings", () => {
  it("sends a readonly=1 user the isolation settings its profile already holds, and only those this server knows", () => {
    expect(querySettings(v18, "user", DEFAULT_QUERY_LIMITS, 10_000)).toEqual({
      settings: {
        wait_end_of_query: "1",
        enable_optimize_predicate_expression: "0",
        optimize_move_to_prewhere: "0",
      },
      unpinned: [],
    });
  });

  it("names the isolation settings a readonly=1 user's profile does not pin, and does not send them (ClickHouse would refuse the query)", () => {
    const { settings, unpinned } = querySettings(current(1), "user", DEFAULT_QUERY_LIMITS, 10_000);
    expect(settings).toEqual({ wait_end_of_query: "1", optimize_move_to_prewhere_if_final: "0" });
    expect(unpinned).toEqual(
      Object.entries(ISOLATION_SETTINGS)
        .filter(([name]) => name !== "optimize_move_to_prewhere_if_final")
        .map(([name, value]) => `${name}=${value}`),
    );
  });

  it("sends the fallback client (and a user that may change settings) readonly=2, every isolation setting and the limits", () => {
    for (const [profile, mode] of [
      [current(0), "fallback"],
      [current(2), "user"],
    ] as const) {
      expect(querySettings(profile, mode, { ...DEFAULT_QUERY_LIMITS, timeoutMs: 2_500 }, 100)).toEqual({
        settings: {
          wait_end_of_query: "1",
          readonly: "2",
          ...ISOLATION_SETTINGS,
          max_threads: "2",
          cancel_http_readonly_queries_on_client_close: "1",
        },
        unpinned: [],
      });
    }
    // 18.16 through the fallback client: the limits it knows, nothing it does not.
    expect(
      querySettings(v18, "fallback", { ...DEFAULT_QUERY_LIMITS, timeoutMs: 2_500 }, 100).settings,
    ).toEqual({
      wait_end_of_query: "1",
      readonly: "2",
      enable_optimize_predicate_expression: "0",
      optimize_move_to_prewhere: "0",
      max_threads: "2",
      max_execution_time: "3",
    });
  });
});
