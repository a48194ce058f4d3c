import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.verifyKey answering 400", () => {
  const h = harness();

  it("refuses apiId and says why, naming it", async () => {
    const res = await h.post("keys.verifyKey", { key: "sk_1", apiId: "api_123" });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([
      {
        location: "/body/apiId",
        message: "apiId is not accepted by keys.verifyKey: the API is the one the key belongs to.",
        fix: "Remove apiId. To verify keys of one API only, give the root key api.<apiId>.verify_key instead of api.*.verify_key.",
      },
    ]);
  });

  it.each([
    [{}, "/body/key", "key is required."],
    [{ key: "" }, "/body/key", "key must be at least 1 character long."],
    [{ key: "k".repeat(513) }, "/body/key", "key must be at most 512 characters long."],
    [{ key: "sk_1", tags: Array(11).fill("t") }, "/body/tags", "tags must hold at most 10 items."],
    [
      { key: "sk_1", tags: ["t".repeat(129)] },
      "/body/tags/0",
      "tags[0] must be at most 128 characters long.",
    ],
    [{ key: "sk_1", tags: [""] }, "/body/tags/0", "tags[0] must be at least 1 character long."],
    [{ key: "sk_1", credits: {} }, "/body/credits/cost", "credits.cost is required."],
    [{ key: "sk_1", credits: { cost: -1 } }, "/body/credits/cost", "credits.cost must be at least 0."],
    [
      { key: "sk_1", credits: { cost: 1e12 + 1 } },
      "/body/credits/cost",
      "credits.cost must be at most 1000000000000.",
    ],
    [{ key: "sk_1", permissions: "" }, "/body/permissions", "permissions must be at least 1 character long."],
    [
      { key: "sk_1", ratelimits: [{ cost: 1 }] },
      "/body/ratelimits/0/name",
      "ratelimits[0].name is required.",
    ],
    [
      { key: "sk_1", ratelimits: [{ name: "requests", cost: -2 }] },
      "/body/ratelimits/0/cost",
      "ratelimits[0].cost must be at least 0.",
    ],
    [
      { key: "sk_1", migrationId: "m".repeat(257) },
      "/body/migrationId",
      "migrationId must be at most 256 characters long.",
    ],
    [{ key: "sk_1", remaining: 1 }, "/body/remaining", "remaining is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("keys.verifyKey", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });

  it("refuses more ratelimits than a key's 50 and its identity's 50 could name", async () => {
    const ratelimits = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `limit_${i}` }));
    const res = await h.post("keys.verifyKey", { key: "sk_1", ratelimits: ratelimits(101) });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      { location: "/body/ratelimits", message: "ratelimits must hold at most 100 items." },
    ]);
  });

  it("answers a permission query syntax error with Unkey's type", async () => {
    const h2 = harness({
      keys: {
        verifyKeyBatch(req) {
          return {
            results: req.items.map(() => {
              const err = domainError(
                ErrorReason.PERMISSIONS_QUERY_SYNTAX,
                "Empty parentheses found at position 9",
              );
              return {
                result: {
                  case: "error" as const,
                  value: {
                    code: err.code,
                    message: err.rawMessage,
                    detail: { reason: ErrorReason.PERMISSIONS_QUERY_SYNTAX },
                  },
                },
              };
            }),
          };
        },
      },
    });
    const res = await h2.post("keys.verifyKey", { key: "sk_1", permissions: "a AND ()" });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}user/bad_request/permissions_query_syntax_error`);
    expect(res.body.error.detail).toBe("Empty parentheses found at position 9");
  });
});
