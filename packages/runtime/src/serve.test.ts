import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { domainError, ErrorReason } from "./errors.ts";
import { type ServedRpc, serveRpc } from "./serve.ts";
import { internalTransport } from "./transport.ts";

let served: ServedRpc;
let ready = true;
let url: string;

beforeAll(async () => {
  served = await serveRpc(
    (router) =>
      router.service(KeysService, {
        authenticateRootKey(req) {
          if (req.hash !== "good") throw domainError(ErrorReason.UNAUTHENTICATED, "unknown root key");
          return { caller: create(CallerSchema, { workspaceId: "ws_1" }) };
        },
      }),
    0,
    { ready: async () => ready },
    "127.0.0.1",
  );
  url = `http://127.0.0.1:${served.port}`;
});
afterAll(async () => {
  // Keep-alive connections from the tests above are idle: shutdown closes them at once.
  const started = Date.now();
  await served.close();
  expect(Date.now() - started).toBeLessThan(2_000);
});

describe("serveRpc", () => {
  it("answers the Connect protocol over HTTP/1.1 and gRPC over h2c on one port", async () => {
    const connect = createClient(KeysService, internalTransport(url));
    expect((await connect.authenticateRootKey({ hash: "good" })).caller?.workspaceId).toBe("ws_1");
    const grpc = createClient(KeysService, createGrpcTransport({ baseUrl: url }));
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
    const client = createClient(KeysService, internalTransport(url));
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
