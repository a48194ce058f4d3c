import http from "node:http";
import net from "node:net";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { type Http1Answer, Http1Client, Http1Error } from "./http1-client.ts";

/**
 * The differential test of http1-client.ts against node:http's client: a raw server writes the same
 * generated answer, split into generated pieces, to a call of each, and the two must read the same
 * status, Content-Type and body. The answers are those a server speaking HTTP/1.1 as node:http does
 * may write: a Content-Length body, a chunked one (with chunk extensions and trailers), or one up to
 * the connection's end; fields in any case and order; keep-alive or Connection: close.
 */

interface Answer {
  status: number;
  contentType: string | undefined;
  body: Buffer;
  framing: "length" | "chunked" | "close";
  chunks: number[];
  extra: [string, string][];
  closeField: boolean;
  upperCase: boolean;
}

function bytesOf(a: Answer): Buffer {
  const fields: [string, string][] = [...a.extra];
  if (a.contentType !== undefined) fields.push(["content-type", a.contentType]);
  if (a.framing === "length") fields.push(["content-length", String(a.body.length)]);
  if (a.framing === "chunked") fields.push(["transfer-encoding", "chunked"]);
  if (a.closeField || a.framing === "close") fields.push(["connection", "close"]);
  const name = (n: string) => (a.upperCase ? n.replace(/(^|-)[a-z]/g, (c) => c.toUpperCase()) : n);
  const head = `HTTP/1.1 ${a.status} ${http.STATUS_CODES[a.status]}\r\n${fields.map(([n, v]) => `${name(n)}: ${v}\r\n`).join("")}\r\n`;
  if (a.framing !== "chunked") return Buffer.concat([Buffer.from(head, "latin1"), a.body]);
  const parts: Buffer[] = [Buffer.from(head, "latin1")];
  let at = 0;
  for (const size of [...a.chunks, a.body.length]) {
    const n = Math.min(size, a.body.length - at);
    if (n <= 0) break;
    parts.push(
      Buffer.from(`${n.toString(16)}${size % 3 === 0 ? ";ext=1" : ""}\r\n`),
      a.body.subarray(at, at + n),
      Buffer.from("\r\n"),
    );
    at += n;
  }
  parts.push(Buffer.from(a.chunks.length % 2 === 0 ? "0\r\n\r\n" : "0\r\nx-trailer: 1\r\n\r\n"));
  return Buffer.concat(parts);
}

const answers: fc.Arbitrary<Answer> = fc.record({
  status: fc.constantFrom(200, 201, 400, 404, 408, 412, 429, 500, 503),
  contentType: fc.option(
    fc.constantFrom("application/proto", "application/json", "text/plain; Charset=UTF-8"),
    {
      nil: undefined,
    },
  ),
  body: fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)),
  framing: fc.constantFrom("length", "chunked", "close"),
  chunks: fc.array(fc.integer({ min: 1, max: 120 }), { maxLength: 5 }),
  extra: fc.array(
    fc.tuple(
      fc.constantFrom("date", "x-latchkey-thing", "keep-alive", "vary"),
      fc.constantFrom("a", "timeout=5", "Sat, 28 Nov 2026 00:00:00 GMT"),
    ),
    { maxLength: 3 },
  ),
  closeField: fc.boolean(),
  upperCase: fc.boolean(),
});

/** A server that answers each connection's first request with `bytes`, in `pieces`, then closes when it must. */
async function rawServer(bytes: () => { data: Buffer; pieces: number[]; end: boolean }) {
  const server = net.createServer((socket) => {
    socket.once("data", async () => {
      const { data, pieces, end } = bytes();
      let at = 0;
      for (const p of pieces) {
        if (at >= data.length) break;
        socket.write(data.subarray(at, at + p));
        at += p;
        await new Promise((r) => setImmediate(r));
      }
      if (at < data.length) socket.write(data.subarray(at));
      if (end) socket.end();
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { server, port: (server.address() as net.AddressInfo).port };
}

type Read = { status: number; contentType: string | undefined; body: string } | "error";

function viaNode(port: number): Promise<Read> {
  return new Promise((resolve) => {
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path: "/x", agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", () => resolve("error"));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: res.headers["content-type"],
          body: Buffer.concat(chunks).toString("hex"),
        }),
      );
    });
    req.on("error", () => resolve("error"));
    req.end("hello");
  });
}

async function viaClient(port: number): Promise<Read> {
  const client = new Http1Client("127.0.0.1", port);
  try {
    const a: Http1Answer = await client.post("POST /x HTTP/1.1\r\nHost: x\r\n", Buffer.from("hello"));
    return { status: a.status, contentType: a.contentType, body: a.body.toString("hex") };
  } catch {
    return "error";
  } finally {
    client.close();
  }
}

describe("Http1Client against node:http's client", () => {
  it("reads every generated answer, split anywhere, as node:http does", async () => {
    let current: { data: Buffer; pieces: number[]; end: boolean } = {
      data: Buffer.alloc(0),
      pieces: [],
      end: false,
    };
    const { server, port } = await rawServer(() => current);
    try {
      await fc.assert(
        fc.asyncProperty(
          answers,
          fc.array(fc.integer({ min: 1, max: 64 }), { maxLength: 6 }),
          async (a, pieces) => {
            current = { data: bytesOf(a), pieces, end: a.framing === "close" || a.closeField };
            const node = await viaNode(port);
            const ours = await viaClient(port);
            expect(ours).toEqual(node);
            expect(node).not.toBe("error");
          },
        ),
        { numRuns: 150 },
      );
    } finally {
      server.close();
    }
  });
});

describe("Http1Client", () => {
  const servers: http.Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
  });

  async function nodeServer(handler: http.RequestListener) {
    const server = http.createServer(handler);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    return (server.address() as net.AddressInfo).port;
  }

  it("keeps one connection for calls one after another, and opens another for a call made meanwhile", async () => {
    const sockets = new Set<unknown>();
    const port = await nodeServer((req, res) => {
      sockets.add(req.socket);
      req.resume();
      req.on("end", () => res.end("ok"));
    });
    const client = new Http1Client("127.0.0.1", port);
    for (let i = 0; i < 5; i++)
      expect((await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"))).body.toString()).toBe(
        "ok",
      );
    expect(sockets.size).toBe(1);
    await Promise.all([
      client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a")),
      client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("b")),
    ]);
    expect(sockets.size).toBe(2);
    client.close();
  });

  it("does not reuse a connection the server closed while it was idle", async () => {
    let calls = 0;
    const port = await nodeServer((req, res) => {
      calls++;
      req.resume();
      req.on("end", () => {
        res.end("ok");
        // The server's keep-alive timeout, shortened: the connection closes after the answer.
        setTimeout(() => req.socket.destroy(), 5);
      });
    });
    const client = new Http1Client("127.0.0.1", port);
    expect((await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    expect((await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"))).status).toBe(200);
    expect(calls).toBe(2);
    client.close();
  });

  it("fails a call whose connection closes mid-answer, and the next call gets a new connection", async () => {
    let first = true;
    const port = await nodeServer((req, res) => {
      req.resume();
      req.on("end", () => {
        if (first) {
          first = false;
          res.writeHead(200, { "content-length": 10 });
          res.write("abc");
          setTimeout(() => req.socket.destroy(), 5);
        } else res.end("fine");
      });
    });
    const client = new Http1Client("127.0.0.1", port);
    await expect(client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"))).rejects.toBeInstanceOf(
      Http1Error,
    );
    expect((await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"))).body.toString()).toBe(
      "fine",
    );
    client.close();
  });

  it("ends a call from its abort hook with the reason given, and an abort after the answer touches no later call", async () => {
    const port = await nodeServer((req, res) => {
      req.resume();
      if (req.url === "/slow") return;
      req.on("end", () => res.end("ok"));
    });
    const client = new Http1Client("127.0.0.1", port);
    const reason = new Error("given up");
    await expect(
      client.post("POST /slow HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"), (end) =>
        setTimeout(() => end(reason), 10),
      ),
    ).rejects.toBe(reason);
    let late: ((r: Error) => void) | undefined;
    expect(
      (await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"), (end) => (late = end))).status,
    ).toBe(200);
    const next = client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"));
    late!(new Error("too late"));
    expect((await next).body.toString()).toBe("ok");
    client.close();
  });

  it("stops reusing an idle connection a second before the server's Keep-Alive hint, as node:http's agent", async () => {
    const sockets = new Set<unknown>();
    const port = await nodeServer((req, res) => {
      sockets.add(req.socket);
      req.resume();
      req.on("end", () => res.end("ok"));
    });
    servers[0]!.keepAliveTimeout = 2_000; // answers say Keep-Alive: timeout=2
    const client = new Http1Client("127.0.0.1", port);
    await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"));
    await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"));
    expect(sockets.size).toBe(1);
    await new Promise((r) => setTimeout(r, 1_100));
    await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"));
    expect(sockets.size).toBe(2);
    client.close();
  });

  it("reads a long answer that arrives in many reads, with a Content-Length and chunked", async () => {
    const long = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < long.length; i++) long[i] = (i * 7) & 0xff;
    const port = await nodeServer((req, res) => {
      req.resume();
      req.on("end", () => {
        if (req.url === "/chunked") {
          res.writeHead(200, { "content-type": "application/proto" });
          for (let at = 0; at < long.length; at += 100_000) res.write(long.subarray(at, at + 100_000));
          res.end();
        } else res.end(long);
      });
    });
    const client = new Http1Client("127.0.0.1", port);
    expect((await client.post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"))).body.equals(long)).toBe(
      true,
    );
    const chunked = await client.post("POST /chunked HTTP/1.1\r\nHost: x\r\n", Buffer.from("a"));
    expect(chunked.contentType).toBe("application/proto");
    expect(chunked.body.equals(long)).toBe(true);
    client.close();
  });

  it("fails at once when nothing listens", async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r()));
    await expect(
      new Http1Client("127.0.0.1", port).post("POST / HTTP/1.1\r\nHost: x\r\n", Buffer.alloc(0)),
    ).rejects.toBeInstanceOf(Http1Error);
  });
});
