import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { harness } from "../testing/in-memory-gateway.ts";
import { type EdgeServer, listenEdge } from "./edge.ts";
import type { Gateway } from "./gateway.ts";
import { HTTP_LIMITS, type HttpLimits, httpLimits } from "./http-limits.ts";
import { listenNode } from "./node-server.ts";

/** A raw client: what it received, and when the server closed the connection. */
function connect(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  const state = { data: "", closedAt: 0 };
  const closed = new Promise<void>((resolve) =>
    socket.on("close", () => {
      state.closedAt = performance.now();
      resolve();
    }),
  );
  socket.on("data", (d: Buffer) => {
    state.data += d.toString("latin1");
  });
  socket.on("error", () => {});
  const connected = new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return { socket, state, closed, connected };
}

const statuses = (data: string) => [...data.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HEALTH = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
// A request with a long answer: 404 in the error shape, which names the path.
const UNKNOWN = `GET /${"x".repeat(1000)} HTTP/1.1\r\nHost: t\r\n\r\n`;

/** Resolves with how long `p` took, failing past `ms` so a test that would hang fails instead. */
async function within(ms: number, p: Promise<unknown>): Promise<number> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    p,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms);
    }),
  ]);
  clearTimeout(timer);
  return performance.now() - started;
}

describe("the HTTP limits", () => {
  afterEach(() => {
    for (const name of ["HTTP_HEADERS_TIMEOUT_MS", "HTTP_MAX_CONNECTIONS", "HTTP_MIN_BODY_RATE"])
      delete process.env[name];
  });

  it("default to 16 KiB of head, 10 s for it, 30 s a request, 65 s idle, 1 KiB/s of body, 4096 connections", () => {
    expect(HTTP_LIMITS).toEqual({
      maxHeaderBytes: 16_384,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 65_000,
      minBodyRate: 1024,
      maxConnections: 4096,
    });
    expect(httpLimits()).toEqual(HTTP_LIMITS);
  });

  it("are read from the environment, and a value that is no number stops the start", () => {
    process.env["HTTP_HEADERS_TIMEOUT_MS"] = "5000";
    process.env["HTTP_MAX_CONNECTIONS"] = "100";
    expect(httpLimits()).toMatchObject({ headersTimeoutMs: 5000, maxConnections: 100 });
    process.env["HTTP_MIN_BODY_RATE"] = "fast";
    expect(() => httpLimits()).toThrow("HTTP_MIN_BODY_RATE must be an integer");
  });
});

// Both servers, held to the same limits where node:http has the knob.
const SERVERS = [
  ["the edge", listenEdge],
  ["node:http", listenNode],
] as const;

describe.each(SERVERS)("%s, against slow, idle and greedy clients", (_name, listen) => {
  let server: EdgeServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(limits: Partial<HttpLimits>, wrap?: (g: Gateway) => Gateway) {
    const h = harness();
    server = await listen(wrap ? wrap(h.gateway) : h.gateway, 0, "127.0.0.1", limits);
    return server.port;
  }

  it("answers 408 to a slowloris client (a header byte every 100 ms) at the headers deadline, and closes", async () => {
    const port = await start({ headersTimeoutMs: 400, requestTimeoutMs: 5_000 });
    const c = connect(port);
    await c.connected;
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ");
    const drip = setInterval(() => c.socket.write("a"), 100);
    try {
      const took = await within(4_000, c.closed);
      expect(statuses(c.state.data)).toEqual([408]);
      expect(took).toBeGreaterThanOrEqual(350);
    } finally {
      clearInterval(drip);
    }
  });

  it("answers 408 to a connection that sends nothing, at the headers deadline", async () => {
    const port = await start({ headersTimeoutMs: 300, requestTimeoutMs: 5_000, keepAliveTimeoutMs: 5_000 });
    const c = connect(port);
    await c.connected;
    const took = await within(3_000, c.closed);
    expect(statuses(c.state.data)).toEqual([408]);
    expect(took).toBeGreaterThanOrEqual(250);
  });

  it("closes a kept-alive connection idle past keepAliveTimeoutMs, without an answer", async () => {
    const port = await start({ headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 300 });
    const c = connect(port);
    await c.connected;
    c.socket.write(HEALTH);
    const took = await within(3_000, c.closed);
    expect(statuses(c.state.data)).toEqual([200]);
    expect(took).toBeGreaterThanOrEqual(250);
  });

  it("answers 408 to a request whose body is not whole within requestTimeoutMs", async () => {
    const port = await start({ headersTimeoutMs: 300, requestTimeoutMs: 800, minBodyRate: 1 });
    const c = connect(port);
    await c.connected;
    c.socket.write("POST /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n{");
    // 500 bytes a second: fast enough for the rate, too slow for the deadline.
    const drip = setInterval(() => c.socket.write("a".repeat(50)), 100);
    try {
      const took = await within(4_000, c.closed);
      expect(statuses(c.state.data)).toEqual([408]);
      expect(took).toBeGreaterThanOrEqual(700);
    } finally {
      clearInterval(drip);
    }
  });

  it("closes new connections over maxConnections unread, and serves again once one closes", async () => {
    let handled = 0;
    const port = await start({ maxConnections: 3 }, (g) => ({
      ...g,
      exchange: (x, body) => {
        handled++;
        g.exchange(x, body);
      },
      handle: (req, res) => {
        handled++;
        g.handle(req, res);
      },
    }));
    const open = [connect(port), connect(port), connect(port)];
    await Promise.all(open.map((c) => c.connected));
    // The server has counted the three before the fourth comes.
    await sleep(50);
    const over = connect(port);
    over.socket.write(HEALTH);
    await within(3_000, over.closed);
    expect(over.state.data).toBe("");
    expect(handled).toBe(0);

    open[0]!.socket.destroy();
    await open[0]!.closed;
    await sleep(50);
    const again = connect(port);
    again.socket.write(HEALTH);
    await within(3_000, new Promise<void>((r) => again.socket.once("data", () => r())));
    expect(statuses(again.state.data)).toEqual([200]);
    for (const c of [...open, again]) c.socket.destroy();
  });

  it("stops reading a client that pipelines without reading its answers, and answers all once it reads", async () => {
    let handled = 0;
    const port = await start({}, (g) => ({
      ...g,
      exchange: (x, body) => {
        handled++;
        g.exchange(x, body);
      },
      handle: (req, res) => {
        handled++;
        g.handle(req, res);
      },
    }));
    const total = 20_000;
    const socket = net.connect(port, "127.0.0.1");
    socket.on("error", () => {});
    await new Promise<void>((r) => socket.once("connect", () => r()));
    try {
      socket.pause();
      socket.write(Buffer.from(UNKNOWN.repeat(total)));
      // Once the kernel's buffers are full both ways (a few MB), the server takes no more requests.
      let before = -1;
      while (handled !== before) {
        before = handled;
        await sleep(300);
      }
      expect(handled).toBeLessThan(total / 2);

      // Reading again, the client gets every answer, in order.
      let answers = 0;
      let rest = "";
      const all = new Promise<void>((resolve) => {
        socket.on("data", (d: Buffer) => {
          const parts = (rest + d.toString("latin1")).split("HTTP/1.1 404 Not Found");
          answers += parts.length - 1;
          rest = parts.at(-1)!.slice(-30);
          if (answers === total) resolve();
        });
      });
      socket.resume();
      await within(30_000, all);
      expect(handled).toBe(total);
    } finally {
      socket.destroy();
    }
  }, 60_000);
});

describe("the edge, against slow clients node:http lets through", () => {
  let server: EdgeServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("answers 408 to a body trickled slower than minBodyRate, past the grace", async () => {
    server = await listenEdge(harness().gateway, 0, "127.0.0.1", {
      headersTimeoutMs: 300,
      requestTimeoutMs: 10_000,
      minBodyRate: 1_000,
    });
    const c = connect(server.port);
    await c.connected;
    c.socket.write("POST /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n{");
    // 100 bytes a second, a tenth of the least allowed.
    const drip = setInterval(() => c.socket.write("a".repeat(10)), 100);
    try {
      const took = await within(4_000, c.closed);
      expect(statuses(c.state.data)).toEqual([408]);
      expect(took).toBeGreaterThanOrEqual(300);
    } finally {
      clearInterval(drip);
    }
  });

  it("reads a body that keeps to minBodyRate, however long past the grace", async () => {
    server = await listenEdge(harness().gateway, 0, "127.0.0.1", {
      headersTimeoutMs: 200,
      requestTimeoutMs: 10_000,
      minBodyRate: 20,
    });
    const c = connect(server.port);
    await c.connected;
    const body = JSON.stringify({ namespace: "n", identifier: "slow", limit: 1, duration: 1000 });
    c.socket.write(`POST /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\nContent-Length: ${body.length}\r\n\r\n`);
    // 200 bytes a second, ten times the least allowed (room for a busy machine's late timers), over a second.
    for (let i = 0; i < body.length; i += 20) {
      c.socket.write(body.slice(i, i + 20));
      await sleep(100);
    }
    if (c.state.data === "") await within(3_000, new Promise<void>((r) => c.socket.once("data", () => r())));
    // Answered by the gateway (no root key: 401), not cut off by the server.
    expect(statuses(c.state.data)).toEqual([401]);
    c.socket.destroy();
  });

  it("closes a connection whose client has read no answer for requestTimeoutMs", async () => {
    server = await listenEdge(harness().gateway, 0, "127.0.0.1", {
      headersTimeoutMs: 300,
      requestTimeoutMs: 800,
    });
    const socket = net.connect(server.port, "127.0.0.1");
    socket.on("error", () => {});
    await new Promise<void>((r) => socket.once("connect", () => r()));
    socket.pause();
    const closed = new Promise<void>((r) => socket.on("close", () => r()));
    socket.write(Buffer.from(HEALTH.repeat(300_000)));
    await within(15_000, closed);
  }, 20_000);
});
