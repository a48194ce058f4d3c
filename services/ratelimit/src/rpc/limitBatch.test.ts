import { Code } from "@connectrpc/connect";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER } from "../../testing/in-memory-ratelimit.ts";

const check = (identifier: string) => ({ namespace: "api.requests", identifier, limit: 2n, duration: 1000n });

describe("LimitBatch", () => {
  it("answers each item as the unary call would, errors included, in order", async () => {
    const { client } = harness();
    const res = await client.limitBatch({
      callers: [caller("ws_1", ...LIMITER), caller("ws_1", "ratelimit.*.limit")],
      items: [
        { callerIndex: 0, request: { check: check("a") } },
        { callerIndex: 0, request: { check: check("a") } },
        { callerIndex: 0, request: { check: check("a") } },
        { callerIndex: 1, request: { check: { ...check("a"), namespace: "new" } } },
        { callerIndex: 0, request: { check: { ...check("a"), duration: 1n } } },
      ],
    });
    const r = res.results.map((x) => x.result);
    // The caller sent namespace and identifier: the batch does not send them back.
    expect(r[0]).toMatchObject({
      case: "response",
      value: { result: { namespace: "", identifier: "", remaining: 1n } },
    });
    expect(r.slice(0, 3).map((x) => x.case === "response" && x.value.result?.success)).toEqual([
      true,
      true,
      false,
    ]);
    expect(r[3]).toMatchObject({
      case: "error",
      value: { code: Code.PermissionDenied, detail: { reason: ErrorReason.INSUFFICIENT_PERMISSIONS } },
    });
    expect(r[4]).toMatchObject({
      case: "error",
      value: { code: Code.InvalidArgument, detail: { reason: ErrorReason.INVALID_INPUT } },
    });
  });

  it("counts exactly L of N concurrent items across batches", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    const batches = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.limitBatch({
          callers: [c],
          items: Array.from({ length: 100 }, () => ({
            callerIndex: 0,
            request: { check: { ...check("hot"), limit: 100n, duration: 60_000n } },
          })),
        }),
      ),
    );
    const passed = batches
      .flatMap((b) => b.results)
      .filter((x) => x.result.case === "response" && x.result.value.result?.success).length;
    expect(passed).toBe(100);
  });

  it("resolves every item with its own caller and namespace when consecutive items share them", async () => {
    const { client, deps } = harness();
    const at = (namespace: string, identifier = "u") => ({
      namespace,
      identifier,
      limit: 100n,
      duration: 60_000n,
    });
    const ws1 = caller("ws_1", ...LIMITER);
    const ws2 = caller("ws_2", ...LIMITER);
    // Namespaces created (and cached) first, so the batch below resolves without waiting.
    await client.limitBatch({
      callers: [ws1, ws2],
      items: [
        { callerIndex: 0, request: { check: { ...at("api.requests"), cost: 0n } } },
        { callerIndex: 0, request: { check: { ...at("other"), cost: 0n } } },
        { callerIndex: 1, request: { check: { ...at("api.requests"), cost: 0n } } },
      ],
    });
    const other = await deps.store.namespaceByName("ws_1", "other");
    const onlyOther = caller("ws_1", `ratelimit.${other!.id}.limit`);
    const res = await client.limitBatch({
      callers: [ws1, onlyOther, ws2],
      items: [
        { callerIndex: 0, request: { check: at("api.requests") } },
        { callerIndex: 0, request: { check: at("api.requests") } },
        { callerIndex: 1, request: { check: at("api.requests") } },
        { callerIndex: 1, request: { check: at("other") } },
        { callerIndex: 0, request: { check: at("other") } },
        { callerIndex: 2, request: { check: at("api.requests") } },
        { callerIndex: 0, request: { check: at("api.requests") } },
      ],
    });
    expect(
      res.results.map((x) =>
        x.result.case === "response" ? x.result.value.result?.remaining : x.result.case,
      ),
    ).toEqual([99n, 98n, "error", 99n, 98n, 99n, 97n]);
    expect(res.results[2]!.result).toMatchObject({
      case: "error",
      value: { code: Code.PermissionDenied, detail: { reason: ErrorReason.INSUFFICIENT_PERMISSIONS } },
    });
  });
});
