import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { domainError, ErrorReason } from "./errors.ts";
import { INTERNAL_AUTH_HEADER, InternalAuth, signingInterceptor } from "./internal-auth.ts";
import { type ServedRpc, serveRpc } from "./serve.ts";
import { internalTransport } from "./transport.ts";

let served: ServedRpc;
let ready = true;
let url: string;
/** What the implementation was asked, so a test can tell a refused call from one that ran. */
const seen: string[] = [];
const auth = new InternalAuth(["serve-test-secret-serve-test-secret-0123"]);
const stranger = new InternalAuth(["not-the-secret-not-the-secret-not-the-secret"]);

beforeAll(async () => {
  served = await serveRpc(
    (router) =>
      router.service(KeysService, {
        authenticateRootKey(req) {
          seen.push(req.hash);
          if (req.hash !== "good") throw domainError(ErrorReason.UNAUTHENTICATED, "unknown root key");
          return { caller: create(CallerSchema, { workspaceId: "ws_1" }) };
        },
        getApi(req) {
          seen.push(`${req.caller?.workspaceId}/${req.apiId}`);
          return { api: { id: req.apiId, name: req.caller?.workspaceId ?? "" } };
        },
      }),
    0,
    { ready: async () => ready },
    "127.0.0.1",
    { auth },
  );
  url = `http://127.0.0.1:${served.port}`;
});
afterAll(async () => {
  // Keep-alive connections from the tests above are idle: shutdown closes them at once.
  const started = Date.now();
  await served.close();
  expect(Date.now() - started).toBeLessThan(2_000);
});

/** Every protocol serveRpc serves, from connect-node's stock transports, with `interceptors`. */
const stock = (interceptors: ReturnType<typeof signingInterceptor>[] = []): [string, Transport][] => [
  [
    "Connect binary, HTTP/1.1 (the fast path)",
    createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true, interceptors }),
  ],
  ["Connect JSON, HTTP/1.1", createConnectTransport({ baseUrl: url, httpVersion: "1.1", interceptors })],
  [
    "Connect binary, HTTP/2",
    createConnectTransport({ baseUrl: url, httpVersion: "2", useBinaryFormat: true, interceptors }),
  ],
  ["gRPC", createGrpcTransport({ baseUrl: url, interceptors })],
  ["gRPC-Web", createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1", interceptors })],
];

async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  const outcome = await call.then(
    (answer) => answer,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(ConnectError);
  return outcome as ConnectError;
}

describe("serveRpc", () => {
  it("answers the Connect protocol over HTTP/1.1 and gRPC over h2c on one port", async () => {
    const connect = createClient(KeysService, internalTransport(url, { auth }));
    expect((await connect.authenticateRootKey({ hash: "good" })).caller?.workspaceId).toBe("ws_1");
    const grpc = createClient(
      KeysService,
      createGrpcTransport({ baseUrl: url, interceptors: [signingInterceptor(auth)] }),
    );
    expect((await grpc.authenticateRootKey({ hash: "good" })).caller?.workspaceId).toBe("ws_1");
  });

  it("answers /healthz always and /readyz only while the probe says ready", async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    ready = false;
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
    ready = true;
  });

  it("counts RPCs by method and outcome at /metrics", async () => {
    const client = createClient(KeysService, internalTransport(url, { auth }));
    await expect(client.authenticateRootKey({ hash: "bad" })).rejects.toThrow("unknown root key");
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(
      /latchkey_rpc_duration_seconds_count\{service="keys.v1.KeysService",method="AuthenticateRootKey",code="ok"\} [1-9]/,
    );
    expect(text).toMatch(
      /latchkey_rpc_duration_seconds_count\{service="keys.v1.KeysService",method="AuthenticateRootKey",code="Unauthenticated"\} 1/,
    );
    expect(text).toContain("process_cpu_seconds_total");
  });
});

describe("serveRpc with a secret", () => {
  const caller = { workspaceId: "ws_victim", rootKeyId: "rk_1", permissions: ["*"] };

  it("refuses an unsigned call over every protocol, before the implementation runs", async () => {
    seen.length = 0;
    for (const [protocol, transport] of stock()) {
      const err = await refusal(createClient(KeysService, transport).getApi({ caller, apiId: "api_1" }));
      expect([protocol, err.code]).toEqual([protocol, Code.Unauthenticated]);
      expect(err.rawMessage).toContain(INTERNAL_AUTH_HEADER);
    }
    expect(seen).toEqual([]);
  });

  it("refuses a call signed with another secret over every protocol", async () => {
    seen.length = 0;
    for (const [protocol, transport] of stock([signingInterceptor(stranger)])) {
      const err = await refusal(createClient(KeysService, transport).getApi({ caller, apiId: "api_1" }));
      expect([protocol, err.code]).toEqual([protocol, Code.Unauthenticated]);
    }
    expect(seen).toEqual([]);
  });

  it("answers a call signed with the secret over every protocol", async () => {
    seen.length = 0;
    for (const [protocol, transport] of stock([signingInterceptor(auth)])) {
      const res = await createClient(KeysService, transport).getApi({ caller, apiId: "api_1" });
      expect([protocol, res.api?.name]).toEqual([protocol, "ws_victim"]);
    }
    expect(seen).toHaveLength(5);
  });

  it("refuses a signature of one caller sent with another, on the fast path and through connect's adapter", async () => {
    const header = auth.sign("/keys.v1.KeysService/GetApi", {
      caller: { ...caller, workspaceId: "ws_mine" },
    });
    const tamper: ReturnType<typeof signingInterceptor> = (next) => (req) => {
      req.header.set(INTERNAL_AUTH_HEADER, header);
      return next(req);
    };
    seen.length = 0;
    for (const [protocol, transport] of stock([tamper])) {
      const err = await refusal(createClient(KeysService, transport).getApi({ caller, apiId: "api_1" }));
      expect([protocol, err.code]).toEqual([protocol, Code.Unauthenticated]);
    }
    expect(seen).toEqual([]);
  });

  it("checks a call with a deadline on the fast path too", async () => {
    const signed = createClient(KeysService, internalTransport(url, { auth, timeoutMs: 2_000 }));
    expect((await signed.getApi({ caller, apiId: "api_2" })).api?.id).toBe("api_2");
    const unsigned = createClient(KeysService, internalTransport(url, { auth: "none", timeoutMs: 2_000 }));
    expect((await refusal(unsigned.getApi({ caller, apiId: "api_2" }))).code).toBe(Code.Unauthenticated);
  });

  it("answers a refused call on a kept-alive connection and then serves the next one on it", async () => {
    const transport = createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true });
    const refused = createClient(KeysService, transport);
    const big = "x".repeat(256 * 1024);
    expect((await refusal(refused.getApi({ caller, apiId: big }))).code).toBe(Code.Unauthenticated);
    const signed = createClient(
      KeysService,
      createConnectTransport({
        baseUrl: url,
        httpVersion: "1.1",
        useBinaryFormat: true,
        interceptors: [signingInterceptor(auth)],
      }),
    );
    expect((await signed.getApi({ caller, apiId: "api_3" })).api?.id).toBe("api_3");
  });

  it("leaves the probes and /metrics open", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics"])
      expect((await fetch(`${url}${path}`)).status).toBe(200);
  });
});
