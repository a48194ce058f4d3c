import { ClickHouseError } from "@clickhouse/client";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { ErrorReason, type Logger } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, rejection } from "../testing/clickhouse.ts";
import { createMemoryAnalyticsDeps } from "./deps.ts";
import { failureMessage, failureOf, QueryFailedError } from "./query-errors.ts";
import { analyticsRoutes } from "./routes.ts";
import { QueryLimitError } from "./store/analytics-store.ts";

const clickhouse = (code: number, type: string, message: string) =>
  new ClickHouseError({ code: String(code), type, message });
const SECRET =
  "Cannot parse string 'ws_other|key_other|ext_other' as Int64: syntax error at begin of string.";

describe("failureOf", () => {
  it("classes ClickHouse's errors by their code, whatever their text says", () => {
    const cases: [number, string, string][] = [
      [6, "CANNOT_PARSE_TEXT", "conversion_failed"],
      [70, "CANNOT_CONVERT_TYPE", "conversion_failed"],
      [153, "ILLEGAL_DIVISION", "arithmetic_error"],
      [69, "ARGUMENT_OUT_OF_BOUND", "argument_out_of_range"],
      [427, "CANNOT_COMPILE_REGEXP", "invalid_regex"],
      [47, "UNKNOWN_IDENTIFIER", "query_invalid"],
      [215, "NOT_AN_AGGREGATE", "query_invalid"],
      [202, "TOO_MANY_SIMULTANEOUS_QUERIES", "server_busy"],
      [164, "READONLY", "unavailable"],
      [49, "LOGICAL_ERROR", "query_failed"],
    ];
    for (const [code, type, failure] of cases) {
      const err = failureOf(clickhouse(code, type, SECRET));
      expect(err).toBeInstanceOf(QueryFailedError);
      expect(err).toMatchObject({ failure, clickhouse: { code, type, text: SECRET } });
      expect(err.message).toBe(`analytics query failed: ${failure}`);
    }
  });

  it("makes limits of ClickHouse's limit codes, and reads rows or bytes of 396 from its text", () => {
    expect(failureOf(clickhouse(159, "TIMEOUT_EXCEEDED", "Timeout exceeded"))).toEqual(
      new QueryLimitError("time"),
    );
    expect(failureOf(clickhouse(241, "MEMORY_LIMIT_EXCEEDED", "x"))).toEqual(new QueryLimitError("memory"));
    expect(
      failureOf(clickhouse(396, "TOO_MANY_ROWS_OR_BYTES", "Limit for result exceeded, max rows: 10")),
    ).toEqual(new QueryLimitError("rows"));
    expect(
      failureOf(clickhouse(396, "TOO_MANY_ROWS_OR_BYTES", "Limit for result exceeded, max bytes: 1.00 MiB")),
    ).toEqual(new QueryLimitError("bytes"));
  });

  it("reads the code of 18.16's text and of an exception written as a JSON row; anything else is unavailable", () => {
    expect(failureOf(new Error(`Code: 6, e.displayText() = DB::Exception: ${SECRET}`))).toMatchObject({
      failure: "conversion_failed",
    });
    expect(failureOf(new Error(`{"exception": "Code: 153. DB::Exception: Division by zero"}`))).toMatchObject(
      {
        failure: "arithmetic_error",
      },
    );
    // Another package's copy of ClickHouseError: a numeric string code.
    expect(
      failureOf(Object.assign(new Error(SECRET), { code: "427", type: "CANNOT_COMPILE_REGEXP" })),
    ).toMatchObject({
      failure: "invalid_regex",
    });
    expect(
      failureOf(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
    ).toMatchObject({
      failure: "unavailable",
    });
    expect(
      failureOf(new SyntaxError(`Unexpected token 'C', "Code: 6, e."... is not valid JSON`)),
    ).toMatchObject({
      failure: "unavailable",
    });
  });
});

describe("a raw query's ClickHouse error, through getVerifications", () => {
  function service(thrown: unknown) {
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const at = (level: string) => (fields: Record<string, unknown>, message: string) =>
      lines.push({ level, fields, message });
    const log = {
      debug: at("debug"),
      info: at("info"),
      warn: at("warn"),
      error: at("error"),
    } as unknown as Logger;
    const deps = createMemoryAnalyticsDeps({ log });
    deps.store.rawQuery = async () => {
      throw failureOf(thrown);
    };
    const client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
    const ask = () =>
      rejection(
        client.getVerifications({
          caller: callerOf("ws_mine", "api.*.read_analytics"),
          query: "SELECT toInt64(key_id) AS n FROM key_verifications_v1",
        }),
      );
    return { ask, lines };
  }

  it("answers Latchkey's code and message, and logs ClickHouse's text at debug only", async () => {
    const { ask, lines } = service(clickhouse(6, "CANNOT_PARSE_TEXT", SECRET));
    expect(await ask()).toEqual({
      reason: ErrorReason.INVALID_ANALYTICS_QUERY,
      message: failureMessage("conversion_failed"),
    });
    expect(failureMessage("conversion_failed")).toMatch(
      /^The query failed while running: .* \(code: conversion_failed\)\.$/,
    );
    expect(lines).toEqual([
      {
        level: "debug",
        fields: {
          workspaceId: "ws_mine",
          failure: "conversion_failed",
          clickhouseCode: 6,
          clickhouseError: "CANNOT_PARSE_TEXT",
          clickhouseText: SECRET,
        },
        message: "analytics query failed",
      },
    ]);
  });

  it("answers UNAVAILABLE when ClickHouse refused Latchkey itself, logging the code as an error and the text at debug only", async () => {
    const { ask, lines } = service(
      clickhouse(164, "READONLY", `Cannot modify setting in readonly mode. ${SECRET}`),
    );
    expect(await ask()).toEqual({ reason: ErrorReason.UNAVAILABLE, message: failureMessage("unavailable") });
    const errors = lines.filter((l) => l.level !== "debug");
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      level: "error",
      fields: { clickhouseCode: 164, clickhouseError: "READONLY" },
    });
    expect(JSON.stringify(errors)).not.toContain("ws_other");
  });

  it("answers TOO_MANY_ANALYTICS_QUERIES when ClickHouse is running as many of the query user's queries as it may", async () => {
    const { ask } = service(
      clickhouse(202, "TOO_MANY_SIMULTANEOUS_QUERIES", "Too many simultaneous queries"),
    );
    expect(await ask()).toEqual({
      reason: ErrorReason.TOO_MANY_ANALYTICS_QUERIES,
      message: failureMessage("server_busy"),
    });
  });
});
