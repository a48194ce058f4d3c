import http from "node:http";
import net from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { afterEach, describe, expect, it } from "vitest";
import { rpcUnavailable, startingServer } from "./bootstrap.ts";
import { InternalAuth, signingInterceptor } from "./internal-auth.ts";
import { type EarlyPort, listenEarly, listening } from "./listening.ts";
import { type ServedRpc, serveRpc } from "./serve.ts";
import { internalTransport } from "./transport.ts";

const auth = new InternalAuth(["bootstrap-test-secret-bootstrap-test-0123"]);
const caller = create(CallerSchema, { workspaceId: "ws_1" });

/** Every protocol a service serves, from connect-node's stock transports, signed as Latchkey's processes sign. */
const transports = (url: string): [string, Transport][] => {
  const interceptors = [signingInterceptor(auth)];
  return [
    [
      "Connect binary, HTTP/1.1",
      createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true, interceptors }),
    ],
    ["Connect JSON, HTTP/1.1", createConnectTransport({ baseUrl: url, httpVersion: "1.1", interceptors })],
    [
      "Connect binary, HTTP/2",
      createConnectTransport({ baseUrl: url, httpVersion: "2", useBinaryFormat: true, interceptors }),
    ],
    ["gRPC, HTTP/2", createGrpcTransport({ baseUrl: url, interceptors })],
    ["gRPC-Web, HTTP/1.1", createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1", interceptors })],
    ["the processes' own transport", internalTransport(url, { auth })],
  ];
};

const routes = (router: Parameters<Parameters<typeof serveRpc>[0]>[0]) =>
  router.service(KeysService, {
    getApi: (req) => ({ api: { id: req.apiId, name: req.caller?.workspaceId ?? "" } }),
  });

const getJson = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: await res.json() };
};

let early: EarlyPort | undefined;
let served: ServedRpc | undefined;
afterEach(async () => {
  await served?.close();
  early?.close();
  served = undefined;
  early = undefined;
});

describe("a service's port while it starts", () => {
  it("answers /healthz 200 and /readyz 503 naming what it waits for, and every RPC UNAVAILABLE in each protocol", async () => {
    const state = { waitingFor: "PostgreSQL" as string | undefined };
    const starting = startingServer("keys service", { metrics: true, unavailable: rpcUnavailable }, state);
    early = await listenEarly(0, "127.0.0.1", starting.accept, starting.handedOver);
    const url = `http://127.0.0.1:${early.port}`;
    expect(await getJson(`${url}/healthz`)).toEqual({
      status: 200,
      body: { status: "starting", waitingFor: "PostgreSQL" },
    });
    expect(await getJson(`${url}/readyz`)).toEqual({
      status: 503,
      body: { status: "starting", waitingFor: "PostgreSQL" },
    });
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
    state.waitingFor = "NATS";
    for (const [name, transport] of transports(url)) {
      const err = await createClient(KeysService, transport)
        .getApi({ caller, apiId: "api_1" })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect([name, err?.code, err?.rawMessage]).toEqual([
        name,
        Code.Unavailable,
        "keys service is starting: waiting for NATS; retry shortly",
      ]);
    }
  });

  it("is taken over by serveRpc on the same socket: every protocol served after, no connection refused during", async () => {
    const state = { waitingFor: "PostgreSQL" as string | undefined };
    const starting = startingServer("keys service", { metrics: true, unavailable: rpcUnavailable }, state);
    early = await listenEarly(0, "127.0.0.1", starting.accept, starting.handedOver);
    const port = early.port;
    const url = `http://127.0.0.1:${port}`;
    // New connections, one after another, through the handover: each is answered by one server or the other.
    const statuses: number[] = [];
    const failures: string[] = [];
    let probing = true;
    const probes = (async () => {
      const agent = new http.Agent({ keepAlive: false });
      while (probing) {
        await new Promise<void>((resolve) => {
          http
            .get({ host: "127.0.0.1", port, path: "/readyz", agent }, (res) => {
              statuses.push(res.statusCode ?? 0);
              res.resume();
              res.on("end", resolve);
            })
            .on("error", (err) => {
              failures.push(err.message);
              resolve();
            });
        });
      }
    })();
    while (!statuses.includes(503)) await new Promise((r) => setTimeout(r, 5));
    served = await serveRpc(routes, port, { ready: async () => true }, "127.0.0.1", { auth });
    expect(served.port).toBe(port);
    while (statuses.at(-1) !== 200) await new Promise((r) => setTimeout(r, 5));
    probing = false;
    await probes;
    expect(failures).toEqual([]);
    // Once the new server answers, the starting one answers no more.
    expect(statuses.slice(statuses.indexOf(200)).every((s) => s === 200)).toBe(true);
    expect(await getJson(`${url}/healthz`)).toEqual({ status: 200, body: { status: "ok" } });
    for (const [name, transport] of transports(url)) {
      const res = await createClient(KeysService, transport).getApi({ caller, apiId: "api_1" });
      expect([name, res.api?.id, res.api?.name]).toEqual([name, "api_1", "ws_1"]);
    }
    // The port is the new server's to close.
    early.close();
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    await served.close();
    served = undefined;
    const refused = await new Promise<string>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => resolve("connected"));
      s.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    expect(refused).toBe("ECONNREFUSED");
  });

  it("hands over a port only at the host it listens on", async () => {
    const starting = startingServer(
      "x",
      { metrics: false, unavailable: rpcUnavailable },
      { waitingFor: undefined },
    );
    early = await listenEarly(0, "127.0.0.1", starting.accept, starting.handedOver);
    await expect(listening(net.createServer(), early.port, "0.0.0.0")).rejects.toThrow(
      `port ${early.port} is listened on at 127.0.0.1, not 0.0.0.0, by this process`,
    );
  });
});
