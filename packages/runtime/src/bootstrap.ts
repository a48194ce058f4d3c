import http from "node:http";
import http2 from "node:http2";
import type net from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { type EarlyPort, listenEarly } from "./listening.ts";
import type { Logger } from "./logger.ts";
import { collectProcessMetrics, metricsText } from "./metrics.ts";
import { replaying } from "./serve.ts";
import { untilAvailable } from "./waiting.ts";

/** What a process's start is handed: how to wait for a dependency and how to stop what it opened. */
export interface Starting {
  readonly log: Logger;
  /** The port listened on since the start: the server that serves it takes it over (listening()). */
  readonly port: number;
  /** Aborted when the process is told to stop before it has started. */
  readonly signal: AbortSignal;
  /**
   * Waits for a dependency: tries `attempt` until it succeeds, with backoff and one log line per
   * failed try (untilAvailable); meanwhile /readyz answers 503 naming `what`. An error `permanent`
   * says is no outage (a refusal) ends the start instead.
   */
  until<T>(what: string, attempt: () => Promise<T>, permanent?: (err: unknown) => boolean): Promise<T>;
  /** Runs `close` when the process stops: what was opened last is closed first. */
  onStop(close: () => unknown): void;
}

/** How a process answers on its port before it serves: the probes, and 503 to everything else. */
export interface StartingAnswers {
  /** Whether /metrics is served meanwhile (the services' ports serve it; the gateway's public port never does). */
  metrics: boolean;
  /** Answers a request that is no probe: 503 in the shape its callers read (rpcUnavailable for the services). */
  unavailable(req: StartingRequest, res: StartingResponse, message: string): void;
}

export type StartingRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type StartingResponse = http.ServerResponse | http2.Http2ServerResponse;

export interface ProcessSpec<S extends { port: number; host: string }> {
  /** What its log lines call it: "keys service", "gateway", "Latchkey". */
  name: string;
  log: Logger;
  /**
   * Reads and checks every setting. It runs before anything listens or connects: a setting it
   * refuses ends the process (exit 1) with the refusal's message, having touched nothing.
   */
  settings(): S;
  answers: StartingAnswers;
  /**
   * Connects what the process needs (each dependency through `boot.until`) and serves on
   * `boot.port`; resolves once it serves.
   */
  start(settings: S, boot: Starting): Promise<void>;
}

/** The longest a stop may take before the process exits anyway. */
const STOP_WITHIN_MS = 20_000;

/**
 * A process's life, the same for every one (the services through runService, the gateway,
 * npm start): its settings read and checked first; then it listens at once, alive (/healthz 200)
 * and not ready (/readyz 503 naming what it waits for, every other request 503), while it waits
 * for each dependency with backoff rather than exiting on the first error; then it serves; on
 * SIGTERM or SIGINT, during its start or after, it closes what it opened, last opened first.
 */
export async function runProcess<S extends { port: number; host: string }>(
  spec: ProcessSpec<S>,
): Promise<void> {
  const { log, name } = spec;
  let settings: S;
  try {
    settings = spec.settings();
  } catch (err) {
    // On stderr, as an uncaught error would be: the refusal is what an operator reads first.
    process.stderr.write(`${name} cannot start: ${messageOf(err)}\n`);
    process.exit(1);
  }
  const closers: (() => unknown)[] = [];
  const abort = new AbortController();
  const state: { waitingFor: string | undefined } = { waitingFor: undefined };
  const starting = startingServer(name, spec.answers, state);
  let early: EarlyPort;
  try {
    early = await listenEarly(settings.port, settings.host, starting.accept, starting.handedOver);
  } catch (err) {
    log.fatal({ err: messageOf(err) }, `${name} cannot listen on port ${settings.port}`);
    process.exit(1);
  }
  const boot: Starting = {
    log,
    port: early.port,
    signal: abort.signal,
    async until(what, attempt, permanent) {
      state.waitingFor = what;
      try {
        return await untilAvailable(what, attempt, {
          log,
          signal: abort.signal,
          ...(permanent ? { permanent } : {}),
        });
      } finally {
        state.waitingFor = undefined;
      }
    },
    onStop(close) {
      closers.push(close);
    },
  };

  let stopping = false;
  const closeAll = async () => {
    early.close();
    starting.close();
    for (const close of closers.reverse()) {
      try {
        await close();
      } catch (err) {
        log.warn({ err: messageOf(err) }, `${name}: closing failed`);
      }
    }
  };
  const started = spec.start(settings, boot);
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, `${name} stopping`);
    // Within Kubernetes' grace (30 s, 5 of them the preStop sleep) even if a close hangs on a
    // dependency that went away: better an exit that says so than a SIGKILL.
    setTimeout(() => {
      log.error(`${name}: closing took over ${STOP_WITHIN_MS} ms; exiting without the rest`);
      process.exit(1);
    }, STOP_WITHIN_MS).unref();
    abort.abort(new Error(`${name} is stopping (${signal})`));
    // A start cut short settles at once (its waits are aborted); one held in a call that cannot be
    // aborted (a migration's lock, say) is given a moment, then closed under it.
    await Promise.race([started.catch(() => {}), new Promise((r) => setTimeout(r, 5_000).unref())]);
    await closeAll();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  try {
    await started;
  } catch (err) {
    if (stopping) return;
    stopping = true;
    log.fatal({ err }, `${name} failed to start`);
    await closeAll();
    process.exit(1);
  }
}

/**
 * The starting process's answers on its port, over HTTP/1.1 and h2c alike (as serveRpc tells them
 * apart): every HTTP/1.1 answer closes its connection and HTTP/2 sessions are sent GOAWAY once the
 * port is handed over, so the callers' next requests reach the server that took it. `state` says
 * what it waits for, as it changes.
 */
export function startingServer(
  name: string,
  answers: StartingAnswers,
  state: { waitingFor: string | undefined },
) {
  if (answers.metrics) collectProcessMetrics();
  const handler = (req: StartingRequest, res: StartingResponse) => {
    const path = req.url?.split("?")[0];
    if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
    const body = { status: "starting", ...(state.waitingFor ? { waitingFor: state.waitingFor } : {}) };
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    // Alive while it waits, so liveness and startup probes do not restart it for a dependency's outage.
    if (path === "/healthz") return json(200, body);
    if (path === "/readyz") return json(503, body);
    if (path === "/metrics" && answers.metrics) {
      metricsText().then(
        ({ contentType, body: text }) => {
          res.writeHead(200, { "content-type": contentType });
          res.end(text);
        },
        () => json(500, { status: "metrics could not be collected" }),
      );
      return;
    }
    const waiting = state.waitingFor ? `: waiting for ${state.waitingFor}` : "";
    answers.unavailable(req, res, `${name} is starting${waiting}; retry shortly`);
  };
  const h1 = http.createServer(handler);
  const h2 = http2.createServer(handler);
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  const closeAll = (graceMs: number) => {
    for (const session of sessions) session.close();
    const left = [...sockets];
    setTimeout(() => {
      for (const s of left) s.destroy();
    }, graceMs).unref();
  };
  return {
    accept(socket: net.Socket) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.once("data", (chunk) => {
        socket.pause();
        if (chunk.subarray(0, 3).toString("latin1") === "PRI")
          h2.emit("connection", replaying(socket, chunk));
        else {
          socket.unshift(chunk);
          h1.emit("connection", socket);
          socket.resume();
        }
      });
    },
    /** The port is served by its server now: what is still open here ends after its answer. */
    handedOver: () => closeAll(5_000),
    close: () => closeAll(0),
  };
}

/**
 * UNAVAILABLE in the Connect protocol's shape for each of the three a service serves: gRPC and
 * gRPC-Web read it from grpc-status (a trailers-only answer), Connect from the HTTP status and its
 * JSON error body, which the processes' own transport (unary.ts) reads as Code.Unavailable.
 */
export function rpcUnavailable(req: StartingRequest, res: StartingResponse, message: string): void {
  const error = new ConnectError(message, Code.Unavailable);
  const type = String(req.headers["content-type"] ?? "");
  if (type.startsWith("application/grpc")) {
    const headers = new Headers({ "content-type": type });
    setTrailerStatus(headers, error);
    res.writeHead(200, Object.fromEntries(headers));
    res.end();
    return;
  }
  res.writeHead(codeToHttpStatus(Code.Unavailable), { "content-type": "application/json" });
  res.end(Buffer.from(errorToJsonBytes(error, {})));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
