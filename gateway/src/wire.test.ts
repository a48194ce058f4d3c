import {
  create,
  type DescMessage,
  fromBinary,
  type MessageShape,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import {
  KeysService,
  VerifyKeyBatchRequestSchema,
  VerifyKeyBatchResponseSchema,
  VerifyKeyBatchResultSchema,
  VerifyKeyResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { codecStats, withBatchCodecs } from "./wire.ts";

/**
 * A message with every field of its schema set to a value that is not the
 * default, recursively (a oneof takes its first member), so a field added to
 * the proto is exercised here without anyone listing it.
 */
function populated<S extends DescMessage>(schema: S, text = "é✓ text", depth = 0): MessageShape<S> {
  const init: Record<string, unknown> = {};
  const oneofs = new Set<string>();
  for (const f of schema.fields) {
    if (f.oneof) {
      if (oneofs.has(f.oneof.name)) continue;
      oneofs.add(f.oneof.name);
    }
    let value: unknown;
    const scalar = (t: ScalarType) => scalarValue(t, f.number, `${f.name} ${text}`);
    switch (f.fieldKind) {
      case "scalar":
        value = scalar(f.scalar);
        break;
      case "enum":
        value = f.enum.values.at(-1)!.number;
        break;
      case "message":
        value = depth > 4 ? create(f.message) : populated(f.message, text, depth + 1);
        break;
      case "list":
        value =
          f.listKind === "scalar"
            ? [scalar(f.scalar), scalar(f.scalar)]
            : f.listKind === "enum"
              ? [f.enum.values.at(-1)!.number]
              : [populated(f.message, text, depth + 1), populated(f.message, `${text} 2`, depth + 1)];
        break;
      default:
        throw new Error(`populated() does not know ${f.fieldKind} fields yet (${f.name})`);
    }
    if (f.oneof) init[f.oneof.localName] = { case: f.localName, value };
    else init[f.localName] = value;
  }
  return create(schema, init as never);
}

function scalarValue(t: ScalarType, no: number, text: string): unknown {
  switch (t) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BOOL:
      return true;
    case ScalarType.INT64:
      return BigInt(no) * 1_000_000_007n;
    case ScalarType.INT32:
    case ScalarType.UINT32:
      return no;
    default:
      throw new Error(`populated() does not know scalar type ${t} yet`);
  }
}

/** What the codec's Empty-with-unknown-fields becomes on the wire. */
function wire(transportCall: (t: ReturnType<typeof recordingTransport>) => Promise<unknown>) {
  const t = recordingTransport();
  return transportCall(t).then(() => {
    // The codec's own path, not the pass-through (which would write the same bytes).
    expect(t.sentAs).toBe("google.protobuf.Empty");
    return t.sent!;
  });
}

/** A transport that records the bytes it would send and answers `answer`'s bytes, like a serialising transport. */
function recordingTransport(answer: Uint8Array = new Uint8Array()) {
  const t = {
    sent: undefined as Uint8Array | undefined,
    sentAs: "",
    unary(method: { input: DescMessage; output: DescMessage }, ...rest: unknown[]) {
      const input = rest[3] as never;
      t.sent = toBinary(method.input, input);
      t.sentAs = method.input.typeName;
      return Promise.resolve({
        message: fromBinary(method.output, answer),
        header: new Headers(),
        trailer: new Headers(),
      });
    },
    stream() {
      throw new Error("no streams");
    },
  };
  return t;
}

/** The codec over a transport answering `bytes`; `viaCodec()` says the codec's own path was taken. */
function answering(bytes: Uint8Array) {
  const t = recordingTransport(bytes);
  return { transport: withBatchCodecs(t as never), viaCodec: () => t.sentAs === "google.protobuf.Empty" };
}

describe("withBatchCodecs", () => {
  it("encodes a VerifyKeyBatch request to the bytes protobuf-es writes, every field set", async () => {
    const batch = populated(VerifyKeyBatchRequestSchema);
    const sent = await wire((t) =>
      createClient(KeysService, withBatchCodecs(t as never)).verifyKeyBatch(batch),
    );
    expect(Buffer.from(sent)).toEqual(Buffer.from(toBinary(VerifyKeyBatchRequestSchema, batch)));
    expect(fromBinary(VerifyKeyBatchRequestSchema, sent)).toEqual(batch);
  });

  it("encodes long and multi-byte strings and negative and large int64 exactly", async () => {
    const batch = create(VerifyKeyBatchRequestSchema, {
      callers: [{ workspaceId: "ws", rootKeyId: "rk", permissions: ["api.*.verify_key", "é".repeat(300)] }],
      items: [
        {
          callerIndex: 0,
          request: {
            key: "k".repeat(512),
            cost: -5n,
            permissions: "a AND b ".repeat(120),
            tags: ["x".repeat(42), "y".repeat(43), "✓".repeat(42), ""],
            ratelimits: [
              { name: "n".repeat(255), cost: 0n, limit: 9_223_372_036_854_775_807n, duration: 1n },
            ],
            migrationId: "",
            requestId: "req_1",
          },
        },
        { callerIndex: 300, request: { key: "short", requestId: "req_2" } },
        { callerIndex: 1 },
      ],
    });
    const sent = await wire((t) =>
      createClient(KeysService, withBatchCodecs(t as never)).verifyKeyBatch(batch),
    );
    expect(Buffer.from(sent)).toEqual(Buffer.from(toBinary(VerifyKeyBatchRequestSchema, batch)));
  });

  it("decodes every field of a verification itself, as protobuf-es would", async () => {
    const answer = create(VerifyKeyBatchResponseSchema, {
      results: [
        populated(VerifyKeyBatchResultSchema),
        populated(VerifyKeyBatchResultSchema, "plain ascii"),
        { result: { case: "response", value: create(VerifyKeyResponseSchema) } },
      ],
    });
    const bytes = toBinary(VerifyKeyBatchResponseSchema, answer);
    const before = codecStats.fallbacks;
    const codec = answering(bytes);
    const res = await createClient(KeysService, codec.transport).verifyKeyBatch({});
    expect(codec.viaCodec()).toBe(true);
    expect(codecStats.fallbacks - before).toBe(0);
    expect(res).toEqual(fromBinary(VerifyKeyBatchResponseSchema, bytes));
  });

  it("hands errors, empty results, unknown fields and out-of-range numbers to protobuf-es, in order", async () => {
    const error = create(VerifyKeyBatchResultSchema, {
      result: {
        case: "error",
        value: { code: 5, message: "not found", detail: { reason: 5, violations: [{ location: "/x" }] } },
      },
    });
    const negative = create(VerifyKeyBatchResultSchema, {
      result: { case: "response", value: { valid: true, code: 1, credits: -1n, expires: 1n << 60n } },
    });
    const unknownField = create(VerifyKeyResponseSchema, { valid: true, keyId: "key_1" });
    // As a newer keys service would send a field this gateway does not know yet.
    unknownField.$unknown = [{ no: 99, wireType: 0, data: new Uint8Array([7]) }];
    const withUnknown = create(VerifyKeyBatchResultSchema, {
      result: { case: "response", value: unknownField },
    });
    const ok = create(VerifyKeyBatchResultSchema, {
      result: { case: "response", value: { valid: true, code: 1, keyId: "key_2" } },
    });
    const answer = create(VerifyKeyBatchResponseSchema, { results: [error, negative, ok, withUnknown, {}] });
    const bytes = toBinary(VerifyKeyBatchResponseSchema, answer);
    const before = codecStats.fallbacks;
    const codec = answering(bytes);
    const res = await createClient(KeysService, codec.transport).verifyKeyBatch({});
    expect(codec.viaCodec()).toBe(true);
    expect(codecStats.fallbacks - before).toBe(4);
    expect(res).toEqual(fromBinary(VerifyKeyBatchResponseSchema, bytes));
    expect(res.results.map((r) => r.result.case)).toEqual([
      "error",
      "response",
      "response",
      "response",
      undefined,
    ]);
    expect(res.results[1]!.result.value).toMatchObject({ credits: -1n, expires: 1n << 60n });
  });

  it("leaves every other call to the transport as it is", async () => {
    const transport = createRouterTransport((router) =>
      router.service(KeysService, { authenticateRootKey: (req) => ({ caller: { workspaceId: req.hash } }) }),
    );
    const res = await createClient(KeysService, withBatchCodecs(transport)).authenticateRootKey({
      hash: "h",
    });
    expect(res.caller?.workspaceId).toBe("h");
  });

  it("crosses a real Connect transport both ways, the service seeing the request protobuf-es would decode", async () => {
    const batch = populated(VerifyKeyBatchRequestSchema);
    let seen: unknown;
    const transport = createRouterTransport((router) =>
      router.service(KeysService, {
        verifyKeyBatch(req) {
          seen = req;
          return { results: req.items.map(() => populated(VerifyKeyBatchResultSchema)) };
        },
      }),
    );
    const res = await createClient(KeysService, withBatchCodecs(transport)).verifyKeyBatch(batch);
    expect(seen).toEqual(batch);
    expect(res.results).toEqual([
      populated(VerifyKeyBatchResultSchema),
      populated(VerifyKeyBatchResultSchema),
    ]);
    expect(EmptySchema.typeName).toBe("google.protobuf.Empty");
  });
});
