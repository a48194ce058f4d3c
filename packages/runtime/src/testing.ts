import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type DescMethod, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import type { Transport, UnaryResponse } from "@connectrpc/connect";
import { type Caller, CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { connect, type Sql } from "./db.ts";
import type { EventSink, EventType } from "./event-sink.ts";
import type { WireCodecs } from "./unary.ts";

/** A caller of a workspace holding the given root-key permissions, for tests of the services. */
export const callerOf = (workspaceId: string, ...permissions: string[]): Caller =>
  create(CallerSchema, { workspaceId, rootKeyId: `rk_${workspaceId}`, permissions });

/**
 * The PostgreSQL server integration tests use: TEST_DATABASE_URL, else
 * DATABASE_URL, else the one scripts/services.sh runs.
 */
export const testServerUrl = () =>
  process.env["TEST_DATABASE_URL"] ??
  process.env["DATABASE_URL"] ??
  "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** A fresh, empty database per test file, so files run in parallel without seeing each other. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = connect(testServerUrl(), { max: 1 });
  const name = `latchkey_test_${randomBytes(6).toString("hex")}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(testServerUrl());
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 20 });
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
    },
  };
}

/** A TCP port free on 127.0.0.1 right now, for a server a test starts (and may restart) on a port it knows. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A nats-server with JetStream of a test's own, on a port of its own, which the test may kill and start
 * again (the shared one is never stopped); `close` kills it and removes its store. `started: false`
 * leaves it to the test to start, for a process that must find NATS away at first. `args` go to
 * nats-server as they are (e.g. a config file, `-c`).
 */
export async function ownNatsServer(options: { started?: boolean; args?: string[] } = {}) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "latchkey-nats-"));
  let server: ChildProcess | undefined;
  let log = "";
  const listening = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
  const start = async () => {
    server = spawn(
      "nats-server",
      ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir, ...(options.args ?? [])],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    // Its log (on stderr), for tests that look for what it saw (a slow consumer, say); the last MiB.
    server.stderr?.on("data", (d) => {
      log = `${log}${d}`.slice(-1_048_576);
    });
    const until = Date.now() + 10_000;
    while (!(await listening())) {
      if (Date.now() > until) throw new Error(`nats-server did not listen on ${port} within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  /** Kills it (SIGKILL: as abrupt as a crash) and waits for it to exit. */
  const stop = async () => {
    const s = server;
    if (!s || s.exitCode !== null) return;
    const exited = new Promise((r) => s.once("exit", r));
    s.kill("SIGKILL");
    await exited;
  };
  if (options.started !== false) await start();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    start,
    stop,
    /** What the server has logged since the test started it. */
    log: () => log,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `inner` with each call of a method in `codecs` crossing as bytes the way the
 * codec writes and reads them: the request encoded by the codec and decoded by
 * protobuf-es for the service, the answer encoded by protobuf-es and decoded by
 * the codec. For tests that run in memory and still exercise a process's codecs.
 */
export function throughCodecs(inner: Transport, codecs: WireCodecs): Transport {
  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const m: DescMethod = method;
      const codec = codecs[`/${m.parent.typeName}/${m.name}`];
      if (codec === undefined) return inner.unary(method, signal, timeoutMs, header, input, contextValues);
      const bytes = codec.encodeRequest
        ? codec.encodeRequest(input as never)
        : toBinary(m.input, input as never);
      const res = await inner.unary(
        method,
        signal,
        timeoutMs,
        header,
        fromBinary(m.input, bytes) as never,
        contextValues,
      );
      const answer = toBinary(m.output, res.message as never);
      const message = codec.decodeResponse ? codec.decodeResponse(answer) : fromBinary(m.output, answer);
      return { ...res, message } as UnaryResponse<never, never>;
    },
    stream: (...args) => inner.stream(...args),
  };
}

/** An event sink that keeps each event: its message as handed over, and the bytes its type would send. */
export function keepingEventSink(): EventSink & {
  kept: { subject: string; id: string; message: Message; bytes: Uint8Array }[];
} {
  const kept: { subject: string; id: string; message: Message; bytes: Uint8Array }[] = [];
  return {
    kept,
    publish<M extends Message>(type: EventType<M>, id: string, message: M) {
      kept.push({ subject: type.subject, id, message, bytes: type.encode(message) });
    },
    flush: async () => {},
    stats: () => ({ buffered: 0, published: kept.length, dropped: 0 }),
  };
}

/**
 * A TCP proxy on 127.0.0.1:`port` to `target`, which the test starts and stops: a dependency that
 * is away (nothing listens on the port) and then comes, at an address that does not change.
 * `stop` also cuts the connections it carries.
 */
export function tcpProxy(port: number, target: { host: string; port: number }) {
  let server: net.Server | undefined;
  const open = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    open.add(s);
    s.on("close", () => open.delete(s));
    s.on("error", () => s.destroy());
  };
  return {
    port,
    async start() {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        track(client);
        track(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
      });
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(port, "127.0.0.1", () => resolve());
      });
      server = s;
    },
    async stop() {
      const s = server;
      server = undefined;
      for (const socket of open) socket.destroy();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
