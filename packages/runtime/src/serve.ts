import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { Duplex } from "node:stream";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { type InternalAuth, verifyingInterceptor } from "./internal-auth.ts";
import { listening } from "./listening.ts";
import { collectProcessMetrics, metricsText, rpcMetricsInterceptor } from "./metrics.ts";
import { registeredServices, unaryFastPath, unaryMethods, type WireCodecs } from "./unary.ts";

type Fallback = NonNullable<Parameters<typeof connectNodeAdapter>[0]["fallback"]>;

export type Routes = (router: ConnectRouter) => void;

export interface Probe {
  /** Answers true when the process's dependencies answer. */
  ready(): Promise<boolean>;
}

export interface ServedRpc {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves Connect, gRPC and gRPC-Web on one port, over HTTP/1.1 and HTTP/2
 * cleartext: the first bytes of a connection tell which (h2c starts with the
 * "PRI * HTTP/2.0" preface), so plain gRPC clients and the gateway's
 * HTTP/1.1 transport share the port. /healthz and /readyz answer probes.
 * Unary calls in binary protobuf over HTTP/1.1 (what Latchkey's processes
 * send each other) take unaryFastPath; every other call connect's adapter.
 *
 * `auth` is the trust boundary: every call, whichever the protocol, must
 * carry an assertion signed by a Latchkey process (internal-auth.ts) for its
 * method and callers, checked before anything else, or is refused
 * Unauthenticated. Only tests of a service's own wiring pass "none". The
 * probes and /metrics need none.
 */
export async function serveRpc(
  routes: Routes,
  port: number,
  probe: Probe | undefined,
  host: string | undefined,
  options: { codecs?: WireCodecs; auth: InternalAuth | "none" },
): Promise<ServedRpc> {
  collectProcessMetrics();
  // Registered once: connect's adapter and the unary fast path serve the same implementations.
  const services = registeredServices(routes);
  const rpc = connectNodeAdapter({
    routes: (router) => {
      for (const { service, impl } of services) router.service(service, impl);
    },
    // The signature first: a refused call runs nothing else (it is counted in latchkey_rpc_refused_total).
    interceptors:
      options.auth === "none"
        ? [rpcMetricsInterceptor]
        : [verifyingInterceptor(options.auth), rpcMetricsInterceptor],
    fallback: (req, res) => health(req, res, probe),
  });
  const fast = unaryFastPath(unaryMethods(services), options.codecs ?? {}, options.auth);
  const h1 = http.createServer((req, res) => {
    if (!fast(req, res)) rpc(req, res);
  });
  h1.keepAliveTimeout = 65_000;
  // HTTP/1.1 requests in flight per connection, so shutdown can close the idle
  // ones at once and each busy one as soon as its answer is sent.
  // (closeIdleConnections() does not see connections handed over by emit.)
  const inFlight = new Map<net.Socket, number>();
  let closing = false;
  h1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    res.once("finish", () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, left);
      if (closing && left === 0) socket.destroySoon();
    });
  });
  const h2 = http2.createServer(rpc);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      inFlight.delete(socket);
    });
    socket.once("data", (chunk) => {
      socket.pause();
      if (chunk.subarray(0, 3).toString("latin1") === "PRI") {
        // An HTTP/2 session reads from the socket's native handle and would miss
        // the bytes already read, so it gets a stream that replays them first.
        h2.emit("connection", replaying(socket, chunk));
      } else {
        inFlight.set(socket, 0);
        socket.unshift(chunk);
        h1.emit("connection", socket);
        socket.resume();
      }
    });
  });
  return {
    port: await listening(server, port, host ?? "0.0.0.0"),
    close: () =>
      new Promise<void>((resolve) => {
        // Stop accepting, let in-flight calls finish: idle HTTP/1.1 connections
        // close now, HTTP/2 sessions get GOAWAY and close after their streams.
        closing = true;
        server.close(() => resolve());
        for (const [socket, requests] of inFlight) if (requests === 0) socket.destroySoon();
        for (const session of sessions) session.close();
        setTimeout(() => {
          for (const s of sockets) s.destroy();
        }, 5_000).unref();
        if (sockets.size === 0) resolve();
      }),
  };
}

/** A duplex over `socket` whose readable side starts with `head`. */
function replaying(socket: net.Socket, head: Buffer): Duplex {
  const duplex = new Duplex({
    read: () => socket.resume(),
    write: (chunk, encoding, callback) => socket.write(chunk, encoding, callback),
    final: (callback) => socket.end(callback),
    destroy: (err, callback) => {
      socket.destroy(err ?? undefined);
      callback(err);
    },
  });
  duplex.push(head);
  socket.on("data", (data) => {
    if (!duplex.push(data)) socket.pause();
  });
  socket.on("end", () => duplex.push(null));
  socket.on("error", (err) => duplex.destroy(err));
  socket.on("close", () => duplex.destroy());
  return duplex;
}

function health(req: Parameters<Fallback>[0], res: Parameters<Fallback>[1], probe?: Probe) {
  const path = req.url?.split("?")[0];
  const answer = (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (path === "/healthz") return answer(200, { status: "ok" });
  if (path === "/metrics") {
    metricsText().then(({ contentType, body }) => {
      res.writeHead(200, { "content-type": contentType });
      res.end(body);
    });
    return;
  }
  if (path === "/readyz") {
    if (!probe) return answer(200, { status: "ready" });
    probe.ready().then(
      (ok) => answer(ok ? 200 : 503, { status: ok ? "ready" : "not ready" }),
      () => answer(503, { status: "not ready" }),
    );
    return;
  }
  answer(404, { status: "not found" });
}
