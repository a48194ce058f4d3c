import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  createContextKey,
  createHandlerContext,
} from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport } from "@connectrpc/connect-node";
import type { WireCodecs } from "@latchkey/proto/codecs/wire/codec";
import { type GetApiRequest, type GetApiResponse, KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { domainError, ErrorReason, errorDetailOf } from "./errors.ts";
import { localTransport } from "./local-transport.ts";
import { type ServedRpc, serveRpc } from "./serve.ts";
import { CallContext, unaryTransport } from "./unary.ts";

/** A KeysService that answers what it was asked, fails on demand and can be slow. */
const routes = (router: Parameters<Parameters<typeof serveRpc>[0]>[0]) =>
  router.service(KeysService, {
    async getApi(req, ctx) {
      // Which context the call got, and the deadline it read: the fast path's own, or connect's.
      if (req.apiId === "api_context")
        return { api: { id: ctx.constructor.name, name: String(ctx.timeoutMs() ?? "none") } };
      if (req.apiId === "api_missing")
        throw domainError(ErrorReason.API_NOT_FOUND, "The API does not exist.");
      if (req.apiId === "api_broken") throw new Error("the database is down");
      // What postgres.js throws when its connection broke under a query.
      if (req.apiId === "api_disconnected")
        throw Object.assign(new Error("write CONNECTION_CLOSED 127.0.0.1:5432"), {
          code: "CONNECTION_CLOSED",
        });
      if (req.apiId === "api_slow") await new Promise((r) => setTimeout(r, 300));
      // Non-ASCII text crosses the wire intact in both directions.
      return { api: { id: req.apiId, name: `naïve ${req.apiId} ✓` } };
    },
  });

let served: ServedRpc;
let url: string;
let stock: http.Server;
let stockUrl: string;

beforeAll(async () => {
  served = await serveRpc(routes, 0, undefined, "127.0.0.1", { auth: "none" });
  url = `http://127.0.0.1:${served.port}`;
  // Connect's own server, without the fast path: the client must speak its protocol.
  stock = http.createServer(connectNodeAdapter({ routes }));
  await new Promise<void>((resolve) => stock.listen(0, "127.0.0.1", resolve));
  stockUrl = `http://127.0.0.1:${(stock.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await served.close();
  await new Promise<void>((resolve) => stock.close(() => resolve()));
});

const stockClient = (baseUrl: string, useBinaryFormat: boolean) =>
  createClient(KeysService, createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat }));
const fastClient = (baseUrl: string) =>
  createClient(KeysService, unaryTransport(baseUrl, createConnectTransport({ baseUrl, httpVersion: "1.1" })));

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

describe.each([
  ["the fast client against the fast path", () => fastClient(url)],
  ["connect's binary client against the fast path", () => stockClient(url, true)],
  ["connect's JSON client against connect's adapter", () => stockClient(url, false)],
  ["the fast client against a stock Connect server", () => fastClient(stockUrl)],
])("%s", (_name, client) => {
  it("answers the message", async () => {
    const res = await client().getApi({ apiId: "api_1" });
    expect(res.api?.name).toBe("naïve api_1 ✓");
    expect(res.api?.id).toBe("api_1");
    expect(res.api?.createdAt).toBe(0n);
  });

  it("raises a domain error with its code, message and detail", async () => {
    const err = await failure(client().getApi({ apiId: "api_missing" }));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe("The API does not exist.");
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.API_NOT_FOUND);
  });

  it("raises any other failure as code Internal, as connect does", async () => {
    expect((await failure(client().getApi({ apiId: "api_broken" }))).code).toBe(Code.Internal);
  });

  it("raises DeadlineExceeded when the deadline passes", async () => {
    const err = await failure(client().getApi({ apiId: "api_slow" }, { timeoutMs: 50 }));
    expect(err.code).toBe(Code.DeadlineExceeded);
  });

  it("raises Unimplemented for a method the server does not serve", async () => {
    expect((await failure(client().createApi({ name: "x" }))).code).toBe(Code.Unimplemented);
  });
});

describe.each([
  ["the fast client against the fast path", () => fastClient(url)],
  ["connect's binary client against the fast path", () => stockClient(url, true)],
  ["connect's JSON client against connect's adapter", () => stockClient(url, false)],
  ["a call in process", () => createClient(KeysService, localTransport(routes))],
])("a served method whose database connection broke, to %s", (_name, client) => {
  it("raises Unavailable with the UNAVAILABLE reason, so the API answers 503, not 500", async () => {
    const err = await failure(client().getApi({ apiId: "api_disconnected" }));
    expect(err.code).toBe(Code.Unavailable);
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.UNAVAILABLE);
    expect(err.rawMessage).toBe(
      "A database or service Latchkey depends on is unavailable right now; retry shortly.",
    );
  });
});

describe("unaryTransport", () => {
  it("raises Unavailable when nothing listens", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await failure(fastClient(`http://127.0.0.1:${port}`).getApi({ apiId: "api_1" }));
    expect(err.code).toBe(Code.Unavailable);
  });

  it("raises Canceled when the caller aborts", async () => {
    const abort = new AbortController();
    const call = fastClient(url).getApi({ apiId: "api_slow" }, { signal: abort.signal });
    setTimeout(() => abort.abort(), 20);
    expect((await failure(call)).code).toBe(Code.Canceled);
  });

  it("raises DeadlineExceeded in time against a server that accepts and never answers, and closes that connection", async () => {
    const held = new Set<net.Socket>();
    const hold = net.createServer((socket) => {
      held.add(socket);
      socket.resume(); // reads the request, answers nothing
      socket.on("close", () => held.delete(socket));
    });
    await new Promise<void>((resolve) => hold.listen(0, "127.0.0.1", resolve));
    const client = fastClient(`http://127.0.0.1:${(hold.address() as AddressInfo).port}`);
    const started = performance.now();
    const err = await failure(client.getApi({ apiId: "api_1" }, { timeoutMs: 100 }));
    const took = performance.now() - started;
    expect(err.code).toBe(Code.DeadlineExceeded);
    expect(took).toBeGreaterThanOrEqual(95);
    expect(took).toBeLessThan(1_000);
    // The held connection is not put back in the pool for the next call.
    await new Promise((r) => setTimeout(r, 50));
    expect(held.size).toBe(0);
    await new Promise<void>((resolve) => hold.close(() => resolve()));
  });

  it("raises Unavailable when the connection closes halfway through the answer", async () => {
    const cut = net.createServer((socket) => {
      socket.once("data", () => {
        socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/proto\r\ncontent-length: 100\r\n\r\nabc");
        setTimeout(() => socket.destroy(), 20);
      });
    });
    await new Promise<void>((resolve) => cut.listen(0, "127.0.0.1", resolve));
    const client = fastClient(`http://127.0.0.1:${(cut.address() as AddressInfo).port}`);
    const err = await failure(client.getApi({ apiId: "api_1" }, { timeoutMs: 5_000 }));
    expect(err.code).toBe(Code.Unavailable);
    await new Promise<void>((resolve) => cut.close(() => resolve()));
  });

  it("answers a call with a deadline as one without, when the answer comes in time", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fastClient(url).getApi({ apiId: `api_${i}` }, { timeoutMs: 5_000 }),
      ),
    );
    expect(answers.map((a) => a.api?.id)).toEqual(Array.from({ length: 20 }, (_, i) => `api_${i}`));
  });

  it("raises Canceled at once for a signal aborted before the call", async () => {
    const err = await failure(fastClient(url).getApi({ apiId: "api_1" }, { signal: AbortSignal.abort() }));
    expect(err.code).toBe(Code.Canceled);
  });

  it("keeps one connection for sequential calls", async () => {
    const connections = new Set<string>();
    const counter = http.createServer(connectNodeAdapter({ routes }));
    counter.on("connection", (s) => connections.add(`${s.remotePort}`));
    await new Promise<void>((resolve) => counter.listen(0, "127.0.0.1", resolve));
    const client = fastClient(`http://127.0.0.1:${(counter.address() as AddressInfo).port}`);
    for (let i = 0; i < 5; i++) await client.getApi({ apiId: `api_${i}` });
    expect(connections.size).toBe(1);
    counter.closeAllConnections();
    await new Promise<void>((resolve) => counter.close(() => resolve()));
  });
});

describe("the fast path", () => {
  it("serves a call with a deadline itself, its handler reading what is left of it", async () => {
    const res = await fastClient(url).getApi({ apiId: "api_context" }, { timeoutMs: 4_000 });
    expect(res.api?.id).toBe("CallContext");
    expect(Number(res.api?.name)).toBeGreaterThan(3_900);
    expect(Number(res.api?.name)).toBeLessThanOrEqual(4_000);
    expect((await fastClient(url).getApi({ apiId: "api_context" })).api?.name).toBe("none");
  });

  it("leaves a malformed deadline to connect's adapter, which refuses it", async () => {
    const res = await fetch(`${url}/keys.v1.KeysService/GetApi`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-timeout-ms": "soon" },
      body: new Uint8Array(0),
    });
    expect(res.status).toBe(400);
  });
});

describe("hand-written codecs", () => {
  it("are used by the fast path and by unaryTransport for their method, and answer the same message", async () => {
    const used: string[] = [];
    const path = "/keys.v1.KeysService/GetApi";
    const getApi = KeysService.method.getApi;
    const codecs: WireCodecs = {
      [path]: {
        decodeRequest(bytes) {
          used.push("server decode");
          return fromBinary(getApi.input, bytes);
        },
        encodeResponse(message: GetApiResponse) {
          used.push("server encode");
          return toBinary(getApi.output, message);
        },
        encodeRequest(message: GetApiRequest) {
          used.push("client encode");
          return toBinary(getApi.input, message);
        },
        decodeResponse(bytes) {
          used.push("client decode");
          return fromBinary(getApi.output, bytes);
        },
      },
    };
    const withCodecs = await serveRpc(routes, 0, undefined, "127.0.0.1", { codecs, auth: "none" });
    try {
      const baseUrl = `http://127.0.0.1:${withCodecs.port}`;
      const client = createClient(
        KeysService,
        unaryTransport(baseUrl, createConnectTransport({ baseUrl, httpVersion: "1.1" }), codecs),
      );
      expect((await client.getApi({ apiId: "api_7" })).api?.name).toBe("naïve api_7 ✓");
      expect(used).toEqual(["client encode", "server decode", "server encode", "client decode"]);
      // A method without codecs goes through protobuf-es on both ends.
      expect((await failure(client.createApi({ name: "x" }))).code).toBe(Code.Unimplemented);
      expect(used).toHaveLength(4);
    } finally {
      await withCodecs.close();
    }
  });
});

describe("CallContext", () => {
  const method = KeysService.method.getApi;

  it("reads as connect's createHandlerContext does for a call with no deadline or signal", () => {
    const init = {
      service: KeysService,
      method,
      protocolName: "local",
      requestMethod: "POST",
      url: "/keys.v1.KeysService/GetApi",
      requestHeader: { "x-asked": "1" },
    };
    const stock = createHandlerContext(init);
    const light = new CallContext(method, "local", { "x-asked": "1" });
    for (const ctx of [stock, light]) {
      expect(ctx.method).toBe(method);
      expect(ctx.service).toBe(KeysService);
      expect(ctx.protocolName).toBe("local");
      expect(ctx.requestMethod).toBe("POST");
      expect(ctx.timeoutMs()).toBeUndefined();
      expect(ctx.signal.aborted).toBe(false);
      expect(ctx.requestHeader.get("x-asked")).toBe("1");
      expect([...ctx.responseHeader]).toEqual([]);
      expect([...ctx.responseTrailer]).toEqual([]);
    }
    expect(light.url).toBe(stock.url);
  });

  it("reports what is left of a deadline, and aborts its signal with DeadlineExceeded when it passes", async () => {
    const ctx = new CallContext(method, "connect", undefined, 30);
    expect(ctx.timeoutMs()).toBeGreaterThan(20);
    const signal = ctx.signal;
    expect(signal.aborted).toBe(false);
    await new Promise((r) => setTimeout(r, 60));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(ctx.timeoutMs()).toBe(0);
  });

  it("keeps what a handler sets, and aborts the signal it handed out", () => {
    const ctx = new CallContext(method, "connect");
    ctx.responseHeader.set("x-set", "a");
    ctx.responseTrailer.set("x-trailer", "b");
    const key = createContextKey(0);
    ctx.values.set(key, 7);
    expect(ctx.responseHeader.get("x-set")).toBe("a");
    expect(ctx.responseTrailer.get("x-trailer")).toBe("b");
    expect(ctx.values.get(key)).toBe(7);
    const signal = ctx.signal;
    expect(ctx.signal).toBe(signal);
    ctx.abort(new Error("done"));
    expect(signal.aborted).toBe(true);
    // No signal asked for: nothing to abort, and no failure.
    expect(() => new CallContext(method, "connect").abort()).not.toThrow();
  });
});
