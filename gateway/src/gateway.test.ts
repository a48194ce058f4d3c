import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { domainError, ErrorReason, hashKey, type Logger, MemoryBus } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness, passingLimits } from "../testing/in-memory-gateway.ts";
import { KEYS_CHANGED_SUBJECT } from "./auth.ts";

/** A logger that keeps what it is given, at every level. */
function recordingLog() {
  const lines: Record<string, unknown>[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg?: string) =>
    lines.push({ level, msg, ...obj });
  const log = {
    error: at("error"),
    warn: at("warn"),
    info: at("info"),
    debug: at("debug"),
    trace: at("trace"),
  };
  return { log: log as unknown as Logger, lines };
}

describe("the gateway around every operation", () => {
  it("answers 404 in the error shape for a path that is no operation", async () => {
    const h = harness();
    const res = await h.post("keys.doesNotExist", {});
    expect(res.status).toBe(404);
    expect(res.body.meta.requestId).toMatch(/^req_/);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "No operation is served at '/v2/keys.doesNotExist'.",
      status: 404,
      type: `${DOCS}unkey/resource/not_found`,
    });
  });

  it("answers 405 with Allow: POST for a GET on an operation", async () => {
    const h = harness();
    const res = await h.get("/v2/keys.verifyKey");
    expect(res.status).toBe(405);
    expect(res.headers["allow"]).toBe("POST");
    expect(res.body.error.status).toBe(405);
  });

  it("answers GET /v2/liveness without a root key", async () => {
    const h = harness();
    const res = await h.get("/v2/liveness");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      meta: { requestId: expect.stringMatching(/^req_/) },
      data: { message: "OK" },
    });
  });

  it("answers /healthz and /readyz for probes", async () => {
    const h = harness();
    expect((await h.get("/healthz")).status).toBe(200);
    expect((await h.get("/readyz")).status).toBe(200);
  });

  it("gives every request its own requestId", async () => {
    const h = harness();
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) ids.add((await h.get("/v2/liveness")).body.meta.requestId);
    expect(ids.size).toBe(50);
  });

  it("answers 400 naming /body for malformed JSON, before authentication", async () => {
    const h = harness();
    const res = await h.post("apis.createApi", undefined, {
      raw: '{"name": "payments",',
      authorization: null,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([
      expect.objectContaining({ location: "/body", message: expect.stringContaining("not valid JSON") }),
    ]);
  });

  it("answers 400 naming where a U+0000 is, in a value, an array element or a key, before authentication", async () => {
    const h = harness();
    const cases: [string, string, string][] = [
      ["apis.createApi", '{"name":"pay\\u0000ments"}', "/body/name"],
      [
        "ratelimits.limit",
        '{"namespace":"api","identifier":"a\\u0000b","limit":1,"duration":1000}',
        "/body/identifier",
      ],
      ["keys.verifyKey", '{"key":"sk_1","tags":["ok","b\\u0000"]}', "/body/tags/1"],
      ["keys.createKey", '{"apiId":"api_1","meta":{"a/b":{"c\\u0000":1}}}', "/body/meta/a~1b/c\u0000"],
    ];
    for (const [operation, raw, location] of cases) {
      const res = await h.post(operation, undefined, { raw, authorization: null });
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
      expect(res.body.error.errors).toEqual([
        {
          location,
          message: "U+0000 (NUL) cannot be stored.",
          fix: "Remove the \\u0000 characters from the value or key.",
        },
      ]);
    }
  });

  it("takes an escaped backslash followed by u0000 as the text it is, not as U+0000", async () => {
    const h = harness();
    const res = await h.post("apis.createApi", undefined, {
      raw: '{"name":"a\\\\u0000"}',
      authorization: null,
    });
    // Past the body checks, authentication answers: the name itself was accepted.
    expect(res.status).toBe(401);
  });

  it("answers 400 for an empty body", async () => {
    const h = harness();
    const res = await h.post("apis.createApi", undefined, { raw: "" });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0].location).toBe("/body");
  });

  it("answers 400 when the body is not an object", async () => {
    const h = harness();
    const res = await h.post("apis.createApi", [1, 2]);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([{ location: "/body", message: "the body must be an object." }]);
  });

  it("answers 413 for a body over 1 MiB, without reading it", async () => {
    const h = harness();
    const big = Buffer.alloc(1024 * 1024 + 1, 0x20);
    const res = await h.post("apis.createApi", undefined, { raw: big });
    expect(res.status).toBe(413);
    expect(res.headers["connection"]).toBe("close");
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/request_too_large`);
  });

  it("answers 503 with nothing specific when a service is unavailable", async () => {
    const h = harness({
      keys: {
        createApi() {
          throw new ConnectError("connect ECONNREFUSED 127.0.0.1:7071", Code.Unavailable);
        },
      },
    });
    const res = await h.post("apis.createApi", { name: "payments" });
    expect(res.status).toBe(503);
    expect(res.body.error.detail).not.toContain("ECONNREFUSED");
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/service_unavailable`);
  });

  it("answers 500 with a generic detail for an unexpected failure", async () => {
    const h = harness({
      keys: {
        createApi() {
          throw new Error('relation "apis" does not exist');
        },
      },
    });
    const res = await h.post("apis.createApi", { name: "payments" });
    expect(res.status).toBe(500);
    expect(res.body.error).toEqual({
      title: "Internal Server Error",
      detail: "Something went wrong on our side. Quote the requestId when reporting it.",
      status: 500,
      type: `${DOCS}unkey/application/unexpected_error`,
    });
  });

  it("logs the cause of a 500 once, with the requestId and operation, and no secret", async () => {
    const { log, lines } = recordingLog();
    const h = harness({
      log,
      keys: {
        createApi() {
          throw new Error('relation "apis" does not exist');
        },
      },
    });
    const key = h.rootKey("*");
    const res = await h.post("apis.createApi", { name: "payments" }, { key });
    expect(res.status).toBe(500);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: "error",
      requestId: res.body.meta.requestId,
      operation: "apis.createApi",
      workspaceId: "ws_test",
    });
    expect(lines[0]?.["err"]).toBeInstanceOf(ConnectError);
    expect(JSON.stringify(lines[0])).not.toContain(key);
  });

  it("logs nothing for a request that succeeds or fails on bad input", async () => {
    const { log, lines } = recordingLog();
    const h = harness({ log, keys: { createApi: () => ({ apiId: "api_1" }) } });
    expect((await h.post("apis.createApi", { name: "payments" })).status).toBe(200);
    expect((await h.post("apis.createApi", { name: "x" })).status).toBe(400);
    expect(lines).toEqual([]);
  });

  it("maps a domain error raised as UNAVAILABLE to 503", async () => {
    const h = harness({
      keys: {
        createApi() {
          throw domainError(ErrorReason.UNAVAILABLE, "database down");
        },
      },
    });
    const res = await h.post("apis.createApi", { name: "payments" });
    expect(res.status).toBe(503);
    expect(res.body.error.detail).not.toContain("database");
  });

  it("answers application/problem+json only to clients that accept it", async () => {
    const h = harness();
    expect((await h.post("keys.nothing", {})).headers["content-type"]).toBe("application/json");
    const res = await h.post("keys.nothing", {}, { accept: "application/problem+json" });
    expect(res.headers["content-type"]).toBe("application/problem+json");
  });
});

describe("root-key resolution", () => {
  const ok = { createApi: () => ({ apiId: "api_1" }) };

  it("asks the keys service once for many requests with one root key", async () => {
    const h = harness({ keys: ok });
    const key = h.rootKey("*");
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => h.post("apis.createApi", { name: "payments" }, { key })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(h.calls.authenticateRootKey).toBe(1);
  });

  it("asks again once the cache TTL has passed, and sees a revoked key", async () => {
    const h = harness({ keys: ok });
    const key = h.rootKey("*");
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(200);
    h.rootKeys.delete(hashKey(key));
    h.clock.advance(4_999);
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(200);
    h.clock.advance(2);
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(401);
    expect(h.calls.authenticateRootKey).toBe(2);
  });

  it("remembers an unknown root key only briefly", async () => {
    const h = harness({ keys: ok });
    const key = "root_created_a_moment_later";
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(401);
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(401);
    expect(h.calls.authenticateRootKey).toBe(1);
    h.rootKey("*");
    const [hash, caller] = [...h.rootKeys.entries()].at(-1)!;
    h.rootKeys.delete(hash);
    h.rootKeys.set(hashKey(key), caller);
    h.clock.advance(1_001);
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(200);
  });

  it("drops a cached root key the moment the bus says it changed", async () => {
    const bus = new MemoryBus();
    const h = harness({ keys: ok, bus });
    const key = h.rootKey("*");
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(200);
    const rootKeyId = h.rootKeys.get(hashKey(key))!.rootKeyId;
    h.rootKeys.delete(hashKey(key));
    bus.publish(
      KEYS_CHANGED_SUBJECT,
      toBinary(KeyChangedSchema, create(KeyChangedSchema, { workspaceId: "ws_test", keyId: rootKeyId })),
    );
    expect((await h.post("apis.createApi", { name: "payments" }, { key })).status).toBe(401);
  });

  it("answers 503, not 401, when the keys service cannot resolve root keys", async () => {
    const h = harness({
      keys: {
        authenticateRootKey() {
          throw new ConnectError("down", Code.Unavailable);
        },
      },
    });
    const res = await h.post("apis.createApi", { name: "payments" });
    expect(res.status).toBe(503);
  });
});

describe("batches in flight", () => {
  /** Limit checks sent one event-loop turn apart, against a LimitBatch that holds every call until released. */
  async function outAtOnce(batchesInFlight: number | undefined) {
    const held: (() => void)[] = [];
    const h = harness({
      ...(batchesInFlight === undefined ? {} : { batchesInFlight }),
      ratelimit: {
        async limitBatch(req) {
          await new Promise<void>((release) => held.push(release));
          return passingLimits(req);
        },
      },
    });
    const answers: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 6; i++) {
      answers.push(
        h.post("ratelimits.limit", { namespace: "n", identifier: `u${i}`, limit: 10, duration: 1000 }),
      );
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
    }
    const out = held.length;
    // Released one by one: each return lets the calls waiting meanwhile leave together.
    while (held.length > 0) {
      held.shift()!();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
    }
    const statuses = (await Promise.all(answers)).map((a) => a.status);
    return { out, statuses };
  }

  it("keeps two batches out by default; the rest wait for one to return", async () => {
    const { out, statuses } = await outAtOnce(undefined);
    expect(out).toBe(2);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
  });

  it("keeps batchesInFlight out when set (npm start sets 8)", async () => {
    const { out, statuses } = await outAtOnce(4);
    expect(out).toBe(4);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
  });
});
