import { create, isMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  createClient,
  createContextValues,
  createHandlerContext,
  createRouterTransport,
} from "@connectrpc/connect";
import {
  KeysService,
  type VerifyKeyBatchRequest,
  VerifyKeyBatchRequestSchema,
  VerifyKeyBatchResponseSchema,
  type VerifyKeyBatchResult,
} from "@latchkey/proto/keys/v1/keys_pb";
import { localTransport } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf } from "../../testing/in-memory-keys.ts";
import { limit, verificationKit } from "../../testing/verification.ts";
import { keysRoutes } from "../routes.ts";
import { verifyBatch } from "./batch.ts";
import { answersInBinary, encodedAnswer, segmentsOf } from "./batch-wire.ts";
import { verified } from "./verify.ts";

/** A batch covering every field of an answer: found with everything, refused, not found, and an error. */
async function mixedBatch() {
  const kit = verificationKit();
  const { seed, clock } = kit;
  await seed.role("editor", ["documents.read", "documents.write"]);
  // Large enough that the answer's lengths take 2 and 3 bytes.
  await seed.role(
    "bulky",
    Array.from({ length: 700 }, (_, i) => `inventory.items.${i}.read`),
  );
  const identityId = await seed.identity("user_1", [limit("shared", 100, true)], '{"plan":"pré"}');
  const apiId = await seed.api();
  const rich = await seed.key({
    apiId,
    credits: 3,
    permissions: [],
    roles: ["editor", "bulky"],
    identityId,
    ratelimits: [
      limit("calls", 10, true),
      limit("named", 5, false),
      limit(`long_${"x".repeat(120)}`, 9, true),
    ],
  });
  await kit.keys.updateKey({
    caller: kit.admin,
    keyId: rich.keyId,
    name: "ключ 🔑",
    metaJson: '{"tier":"gold"}',
    expires: BigInt(clock.now() + 60_000),
  });
  const plain = await seed.key({ apiId });
  const broke = await seed.key({ apiId, credits: 0 });
  const items = [
    { key: rich.key, permissions: "documents.read AND documents.write" },
    { key: rich.key, ratelimits: [{ name: "named", cost: 2n }] },
    { key: plain.key },
    { key: broke.key },
    { key: "not a key" },
    { key: rich.key, permissions: "billing.read" },
    { key: plain.key, ratelimits: [{ name: "nowhere" }] },
    { key: "" },
  ];
  const req = {
    callers: [callerOf("ws_1", "api.*.verify_key")],
    items: items.map((request) => ({ callerIndex: 0, request })),
  };
  return { kit, req };
}

/** A message's fields as plain objects, all the way down: no $typeName. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => k !== "$typeName")
      .map(([k, v]) => [k, plain(v)]),
  );
}

/** Each item's facts (undefined for those without a key the caller may see), from verifying it alone. */
async function factsOf(
  kit: ReturnType<typeof verificationKit>,
  req: MessageInitShape<typeof VerifyKeyBatchRequestSchema>,
) {
  const request = create(VerifyKeyBatchRequestSchema, req);
  return Promise.all(
    request.items.map(async (item) => {
      const caller = request.callers[item.callerIndex];
      if (!caller || !item.request) return undefined;
      try {
        return (await verified(kit.deps, caller, item.request)).facts;
      } catch {
        return undefined;
      }
    }),
  );
}

describe("encodedAnswer", () => {
  it("encodes a batch's results to the bytes protobuf-es writes for them", async () => {
    const { kit, req } = await mixedBatch();
    const handler = (r: VerifyKeyBatchRequest) => verifyBatch(kit.deps, r);
    // No handler context: the plain results, as in process.
    const answer = await handler(create(VerifyKeyBatchRequestSchema, req));
    const { results } = answer;
    // The answer is a message as it is (as localTransport hands it over), encoded without create().
    expect(isMessage(answer, VerifyKeyBatchResponseSchema)).toBe(true);
    const expected = toBinary(VerifyKeyBatchResponseSchema, answer);
    // The facts each answer was made from, as the batch keeps them (a second verification of the same items).
    const kept = await factsOf(kit, req);
    // Complete messages: what create() makes of the same fields given as plain objects, no field missing.
    expect(answer).toEqual(create(VerifyKeyBatchResponseSchema, plain(answer) as never));
    // With the segments kept per cached key, and made from the fields alone.
    expect(
      Buffer.from(
        toBinary(
          VerifyKeyBatchResponseSchema,
          encodedAnswer(results, (i, response) => {
            const facts = kept[i];
            return facts === undefined ? undefined : kit.deps.verification.segments(facts, response);
          }),
        ),
      ),
    ).toEqual(Buffer.from(expected));
    expect(
      Buffer.from(
        toBinary(
          VerifyKeyBatchResponseSchema,
          encodedAnswer(results, () => undefined),
        ),
      ),
    ).toEqual(Buffer.from(expected));
    const cases = results.map((r) => r.result.case);
    expect(cases).toContain("error");
    expect(cases.filter((c) => c === "response")).toHaveLength(6);
  });

  it("keeps a cached key's segments while its grants and identity stay the same", async () => {
    const { kit, req } = await mixedBatch();
    const handler = (r: VerifyKeyBatchRequest) => verifyBatch(kit.deps, r);
    // The first batch resolves the key's grants for each of its items at once; from the second on, all share one.
    await handler(create(VerifyKeyBatchRequestSchema, req));
    const first = await handler(create(VerifyKeyBatchRequestSchema, req));
    const again = await handler(create(VerifyKeyBatchRequestSchema, req));
    const value = (r: VerifyKeyBatchResult) => {
      if (r.result.case !== "response") throw new Error(`a response, not ${r.result.case}`);
      return r.result.value;
    };
    const facts = (await factsOf(kit, req))[0]!;
    const segments = (r: VerifyKeyBatchResult) => kit.deps.verification.segments(facts, value(r));
    expect(segments(again.results[0]!)).toBe(segments(first.results[0]!));
    expect(segments(first.results[0]!)).toEqual(segmentsOf(value(first.results[0]!)));
  });

  it("counts a cached key's segments in the key cache's bytes, once", async () => {
    const { kit, req } = await mixedBatch();
    const handler = (r: VerifyKeyBatchRequest) => verifyBatch(kit.deps, r);
    const { results } = await handler(create(VerifyKeyBatchRequestSchema, req));
    const facts = (await factsOf(kit, req))[0]!;
    const before = kit.deps.keyCache.bytes;
    const rich = results[0]!.result;
    if (rich.case !== "response") throw new Error("the first item verifies");
    const made = kit.deps.verification.segments(facts, rich.value);
    const counted = kit.deps.keyCache.bytes - before;
    expect(counted).toBeGreaterThan(made.before.byteLength + made.after.byteLength);
    kit.deps.verification.segments(facts, rich.value);
    expect(kit.deps.keyCache.bytes - before).toBe(counted);
  });
});

describe("answersInBinary", () => {
  const ctx = (protocolName: string, contentType?: string) =>
    createHandlerContext({
      service: KeysService,
      method: KeysService.method.verifyKeyBatch,
      protocolName,
      requestMethod: "POST",
      url: "/keys.v1.KeysService/VerifyKeyBatch",
      contextValues: createContextValues(),
      ...(contentType ? { requestHeader: { "content-type": contentType } } : {}),
    });

  it("answers true for binary protobuf and the runtime's fast path, false in process and for JSON", () => {
    expect(answersInBinary(ctx("connect"))).toBe(true);
    expect(answersInBinary(ctx("connect", "application/proto"))).toBe(true);
    expect(answersInBinary(ctx("grpc", "application/grpc"))).toBe(true);
    expect(answersInBinary(ctx("grpc", "application/grpc+proto"))).toBe(true);
    expect(answersInBinary(ctx("grpc-web", "application/grpc-web+proto"))).toBe(true);
    expect(answersInBinary(ctx("connect", "application/json"))).toBe(false);
    expect(answersInBinary(ctx("grpc", "application/grpc+json"))).toBe(false);
    expect(answersInBinary(ctx("grpc-web", "application/grpc-web+json"))).toBe(false);
    expect(answersInBinary(ctx("local"))).toBe(false);
    expect(answersInBinary(undefined)).toBe(false);
  });

  it("answers the same results in binary, in JSON and in process", async () => {
    const { kit, req } = await mixedBatch();
    const over = (transport: Parameters<typeof createClient>[1]) => createClient(KeysService, transport);
    const binary = await over(createRouterTransport(keysRoutes(kit.deps))).verifyKeyBatch(req);
    const again = await mixedBatch();
    const json = await over(
      createRouterTransport(keysRoutes(again.kit.deps), { transport: { useBinaryFormat: false } }),
    ).verifyKeyBatch(again.req);
    const third = await mixedBatch();
    const local = await over(localTransport(keysRoutes(third.kit.deps))).verifyKeyBatch(third.req);
    // Each call ran on its own kit (counters and balances fresh): ids differ, nothing else may.
    const shape = (res: typeof binary) =>
      JSON.stringify(res.results, (_, v) => (typeof v === "bigint" ? String(v) : v)).replace(
        /\b[a-z]+_[A-Za-z0-9]{8,}\b/g,
        "<id>",
      );
    expect(binary.results).toHaveLength(8);
    expect(shape(json)).toEqual(shape(binary));
    expect(JSON.parse(shape(local))).toEqual(JSON.parse(shape(binary)));
  });
});
