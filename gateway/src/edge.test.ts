import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { harness, passingLimits } from "../testing/in-memory-gateway.ts";
import { type EdgeOptions, type EdgeServer, listenEdge } from "./edge.ts";
import { listen } from "./listen.ts";

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A raw HTTP/1.1 client: sends `parts` one write each (a pause between them),
 * then reads `answers` answers off the one connection, or whatever came
 * before the server closed it. `closed` tells whether it did.
 */
async function exchange(
  port: number,
  parts: (string | Buffer)[],
  answers: number,
  { pauseMs = 5, bodiless = [] as number[], end = false } = {},
) {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  let received = Buffer.alloc(0);
  let closed = false;
  const got: Answer[] = [];
  const done = new Promise<void>((resolve) => {
    const take = () => {
      for (;;) {
        const end = received.indexOf("\r\n\r\n");
        if (end === -1) break;
        const lines = received.toString("latin1", 0, end).split("\r\n");
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const at = line.indexOf(":");
          headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
        }
        const status = Number(lines[0]!.split(" ")[1]);
        // 1xx answers have no body, nor have the answers to HEAD (`bodiless`: their places).
        const length =
          status < 200 || bodiless.includes(got.length) ? 0 : Number(headers["content-length"] ?? 0);
        if (received.length < end + 4 + length) break;
        got.push({ status, headers, body: received.toString("utf8", end + 4, end + 4 + length) });
        received = received.subarray(end + 4 + length);
      }
      if (got.filter((a) => a.status >= 200).length >= answers) resolve();
    };
    socket.on("data", (d: Buffer) => {
      received = Buffer.concat([received, d]);
      take();
    });
    socket.on("close", () => {
      closed = true;
      resolve();
    });
    socket.on("error", () => {});
  });
  for (const part of parts) {
    socket.write(part);
    await new Promise((r) => setTimeout(r, pauseMs));
  }
  if (end) socket.end();
  await done;
  // A close that follows the last answer at once is seen too.
  await new Promise((r) => setTimeout(r, 20));
  socket.destroy();
  return { answers: got, closed };
}

const limitBody = (identifier: string, limit = 10) =>
  JSON.stringify({ namespace: "n", identifier, limit, duration: 1000 });

const post = (path: string, body: string, key: string, extra = "") =>
  `POST ${path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

describe("the edge HTTP server", () => {
  let server: EdgeServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** A gateway whose ratelimits.limit answers with the limit it was asked for. */
  async function start(options: Partial<EdgeOptions> = {}, maxBodyBytes?: number) {
    const h = harness({
      ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
      ratelimit: { limitBatch: passingLimits },
    });
    server = await listenEdge(h.gateway, 0, "127.0.0.1", options);
    return { port: server.port, key: h.rootKey("*") };
  }

  it("answers requests on one connection in turn, kept alive, each with its length and a date", async () => {
    const { port, key } = await start();
    const { answers, closed } = await exchange(
      port,
      [
        post("/v2/ratelimits.limit", limitBody("a", 7), key),
        post("/v2/ratelimits.limit", limitBody("b", 8), key),
      ],
      2,
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(answers.map((a) => JSON.parse(a.body).data.limit)).toEqual([7, 8]);
    expect(answers[0]!.headers["content-type"]).toBe("application/json");
    expect(Number(answers[0]!.headers["content-length"])).toBe(Buffer.byteLength(answers[0]!.body));
    expect(answers[0]!.headers["date"]).toMatch(/GMT$/);
    expect(answers[0]!.headers["connection"]).toBeUndefined();
    expect(closed).toBe(false);
  });

  it("answers pipelined requests in the order they came, and a request sent byte by byte", async () => {
    const { port, key } = await start();
    const three = [1, 2, 3].map((n) => post("/v2/ratelimits.limit", limitBody(`u${n}`, n), key)).join("");
    const pipelined = await exchange(port, [three], 3);
    expect(pipelined.answers.map((a) => JSON.parse(a.body).data.limit)).toEqual([1, 2, 3]);

    const one = post("/v2/ratelimits.limit", limitBody("slow", 5), key);
    const trickled = await exchange(port, [...one], 1, { pauseMs: 0 });
    expect(trickled.answers.map((a) => [a.status, JSON.parse(a.body).data.limit])).toEqual([[200, 5]]);
  });

  it("reads a body that arrives in many pieces, whole", async () => {
    const { port, key } = await start();
    const body = JSON.stringify({
      namespace: "n",
      identifier: "u",
      limit: 12,
      duration: 1000,
      pad: "p".repeat(150_000),
    });
    const request = Buffer.from(post("/v2/ratelimits.limit", body, key));
    const parts = Array.from({ length: 20 }, (_, i) => request.subarray(i * 7_600, (i + 1) * 7_600));
    const { answers } = await exchange(port, [...parts, request.subarray(20 * 7_600)], 1, { pauseMs: 1 });
    // The whole body was read and parsed: the schema names the field it does not know.
    expect(answers.map((a) => a.status)).toEqual([400]);
    expect(JSON.parse(answers[0]!.body).error.detail).toContain("pad");
  });

  it("reads a chunked body, and answers 100 Continue to Expect: 100-continue", async () => {
    const { port, key } = await start();
    const body = limitBody("chunked", 6);
    const head = `POST /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n`;
    const chunked = [
      head,
      `${(10).toString(16)}\r\n${body.slice(0, 10)}\r\n`,
      `${(body.length - 10).toString(16)};ext=1\r\n${body.slice(10)}\r\n`,
      "0\r\nX-Trailer: t\r\n\r\n",
    ];
    const { answers } = await exchange(port, chunked, 1);
    expect(answers.map((a) => a.status)).toEqual([100, 200]);
    expect(JSON.parse(answers[1]!.body).data).toMatchObject({ success: true, limit: 6 });
  });

  it("answers the gateway's own errors in its error shape, and HEAD without a body", async () => {
    const { port, key } = await start();
    const { answers } = await exchange(
      port,
      [
        post("/v2/ratelimits.limit", "{not json", key),
        "GET /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\n\r\n",
        "HEAD /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
      ],
      4,
      { bodiless: [2] },
    );
    expect(answers.map((a) => a.status)).toEqual([400, 405, 200, 200]);
    expect(answers[2]!.headers["content-length"]).toBe("15");
    expect(answers[3]!.body).toBe('{"status":"ok"}');
    expect(JSON.parse(answers[0]!.body).error.detail).toBe("The request body is not valid JSON.");
    expect(answers[1]!.headers["allow"]).toBe("POST");
  });

  it.each([
    ["no Host on HTTP/1.1", "POST /v2/ratelimits.limit HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400],
    [
      "Content-Length and Transfer-Encoding both",
      "POST /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      400,
    ],
    [
      "two different Content-Lengths",
      "POST /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
      400,
    ],
    [
      "a Content-Length that is no number",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nContent-Length: 1e3\r\n\r\n",
      400,
    ],
    ["a coding other than chunked", "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 400],
    [
      "a folded header line",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n  2\r\nContent-Length: 0\r\n\r\n",
      400,
    ],
    ["a space before the colon", "POST /v2/x HTTP/1.1\r\nHost : t\r\n\r\n", 400],
    ["a control character in a value", "POST /v2/x HTTP/1.1\r\nHost: t\r\nX-A: a\x01b\r\n\r\n", 400],
    [
      "a bare LF in a chunk size",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\n",
      400,
    ],
    [
      "a chunk not ended by CRLF",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX",
      400,
    ],
    ["an absolute URL", "POST http://t/v2/x HTTP/1.1\r\nHost: t\r\n\r\n", 400],
    ["HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400],
    [
      "an unknown expectation",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nExpect: 200-ok\r\nContent-Length: 0\r\n\r\n",
      417,
    ],
    [
      "trailers over maxHeaderBytes",
      `POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${"X-T: 1\r\n".repeat(2_400)}`,
      431,
    ],
    [
      "Content-Length twice, even with the same value",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
      400,
    ],
    ["a tab after a Content-Length", "POST /v2/x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\t\r\n\r\n{}", 400],
    [
      "a tab after chunked",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\t\r\n\r\n0\r\n\r\n",
      400,
    ],
    [
      "a space before a chunk extension",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2 ;a=b\r\n{}\r\n0\r\n\r\n",
      400,
    ],
    [
      "a control character in a chunk extension",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\x01\r\n{}\r\n0\r\n\r\n",
      400,
    ],
    [
      "a space before the colon of a trailer",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T : v\r\n\r\n",
      400,
    ],
    [
      "a control character in a trailer",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: \x01\r\n\r\n",
      400,
    ],
    [
      "a folded trailer",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: v\r\n w\r\n\r\n",
      400,
    ],
    [
      "a Content-Length among the trailers",
      "POST /v2/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n",
      400,
    ],
    ["a lower-case method", "get /healthz HTTP/1.1\r\nHost: t\r\n\r\n", 400],
    ["a method llhttp does not know", "FOO /healthz HTTP/1.1\r\nHost: t\r\n\r\n", 400],
    ["CONNECT", "CONNECT /healthz HTTP/1.1\r\nHost: t\r\n\r\n", 400],
    [
      "a header block over maxHeaderBytes",
      `GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ${"a".repeat(17_000)}\r\n\r\n`,
      431,
    ],
  ])("refuses %s with its status and closes the connection", async (_what, request, status) => {
    const { port } = await start();
    const { answers, closed } = await exchange(port, [request], 1);
    expect(answers.map((a) => a.status)).toEqual([status]);
    expect(answers[0]!.headers["connection"]).toBe("close");
    expect(closed).toBe(true);
  });

  it("answers every request a client sent before it ended its side, in order, then closes", async () => {
    const { port, key } = await start();
    const three = [1, 2, 3].map((n) => post("/v2/ratelimits.limit", limitBody(`e${n}`, n), key)).join("");
    const { answers, closed } = await exchange(port, [three], 3, { end: true, pauseMs: 0 });
    expect(answers.map((a) => [a.status, JSON.parse(a.body).data.limit])).toEqual([
      [200, 1],
      [200, 2],
      [200, 3],
    ]);
    expect(closed).toBe(true);
  });

  it("answers a request that asks for an Upgrade, then closes without reading what follows", async () => {
    const { port } = await start();
    const upgrade = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
    const { answers, closed } = await exchange(
      port,
      [`${upgrade}GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n`],
      2,
    );
    expect(answers.map((a) => [a.status, a.headers["connection"]])).toEqual([[200, "close"]]);
    expect(closed).toBe(true);
  });

  it("skips empty lines before a request line, as node:http does", async () => {
    const { port } = await start();
    const { answers } = await exchange(
      port,
      ["\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"],
      2,
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
  });

  it("answers 413 in the error shape to a body over maxBodyBytes, unread, and closes", async () => {
    const { port, key } = await start({}, 64);
    const big = limitBody("x".repeat(100));
    const byLength = await exchange(port, [post("/v2/ratelimits.limit", big, key)], 1);
    expect(byLength.answers.map((a) => a.status)).toEqual([413]);
    expect(JSON.parse(byLength.answers[0]!.body).error.status).toBe(413);
    expect(byLength.closed).toBe(true);

    const expecting = await exchange(
      port,
      [post("/v2/ratelimits.limit", big, key, "Expect: 100-continue\r\n").split("\r\n\r\n")[0] + "\r\n\r\n"],
      1,
    );
    // Not asked for the body it would refuse: no 100 Continue, the 413 at once.
    expect(expecting.answers.map((a) => a.status)).toEqual([413]);

    const chunk = `POST /v2/ratelimits.limit HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`;
    const byChunks = await exchange(port, [chunk], 1);
    expect(byChunks.answers.map((a) => a.status)).toEqual([413]);
    expect(byChunks.closed).toBe(true);
  });

  it("closes after the answer on Connection: close and on HTTP/1.0 unless it asks to keep alive", async () => {
    const { port, key } = await start();
    const asked = await exchange(
      port,
      [post("/v2/ratelimits.limit", limitBody("c"), key, "Connection: close\r\n")],
      1,
    );
    expect([asked.answers[0]!.status, asked.answers[0]!.headers["connection"], asked.closed]).toEqual([
      200,
      "close",
      true,
    ]);
    const old = await exchange(port, ["GET /healthz HTTP/1.0\r\n\r\n"], 1);
    expect([old.answers[0]!.status, old.closed]).toEqual([200, true]);
    const kept = await exchange(port, ["GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"], 1);
    expect([kept.answers[0]!.headers["connection"], kept.closed]).toEqual(["keep-alive", false]);
  });

  it("answers a client that ends its side after the request, then closes", async () => {
    const { port, key } = await start();
    const { answers, closed } = await exchange(
      port,
      [post("/v2/ratelimits.limit", limitBody("h", 4), key)],
      1,
      {
        end: true,
        pauseMs: 0,
      },
    );
    expect(answers.map((a) => [a.status, JSON.parse(a.body).data.limit])).toEqual([[200, 4]]);
    expect(closed).toBe(true);
  });

  it("answers 408 to a request whose headers do not arrive in time, and closes an idle connection", async () => {
    const { port } = await start({ headersTimeoutMs: 300, keepAliveTimeoutMs: 300 });
    const slow = await exchange(port, ["GET /healthz HTTP/1.1\r\nHo"], 1);
    expect(slow.answers.map((a) => a.status)).toEqual([408]);
    expect(slow.closed).toBe(true);
    const idle = await exchange(port, ["GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"], 2);
    expect(idle.answers.map((a) => a.status)).toEqual([200]);
    expect(idle.closed).toBe(true);
  });

  it("close() ends idle connections and stops listening", async () => {
    const { port, key } = await start();
    const socket = net.connect(port, "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const closing = server!.close();
    server = undefined;
    await ended;
    await closing;
    // Not listening any more.
    await expect(exchange(port, [post("/v2/ratelimits.limit", limitBody("z"), key)], 1)).rejects.toThrow();
  });
});

describe("listen: HTTP_SERVER", () => {
  afterEach(() => {
    delete process.env["HTTP_SERVER"];
  });

  async function ask(kind: string | undefined) {
    if (kind === undefined) delete process.env["HTTP_SERVER"];
    else process.env["HTTP_SERVER"] = kind;
    const h = harness();
    const server = await listen(h.gateway, 0, "127.0.0.1");
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const headers = { authorization: `Bearer ${h.rootKey("*")}`, "content-type": "application/json" };
      const answers = [];
      for (const [path, body] of [
        ["/v2/keys.nothing", "{}"],
        ["/v2/apis.createApi", "{not json"],
        ["/v2/apis.createApi", '{"name":1}'],
      ] as const) {
        const res = await fetch(`${url}${path}`, { method: "POST", headers, body });
        const json = (await res.json()) as { error: unknown };
        answers.push({ status: res.status, type: res.headers.get("content-type"), error: json.error });
      }
      const health = await fetch(`${url}/healthz`);
      return { answers, keepAlive: health.headers.get("keep-alive") };
    } finally {
      await server.close();
    }
  }

  it("serves through the edge by default and through node:http with node, answering alike", async () => {
    const edge = await ask(undefined);
    const node = await ask("node");
    // node:http announces its keep-alive timeout; the edge keeps connections alive without saying so.
    expect([edge.keepAlive, node.keepAlive]).toEqual([null, "timeout=65"]);
    expect(edge.answers.map((a) => a.status)).toEqual([404, 400, 400]);
    expect(node.answers).toEqual(edge.answers);
  });

  it("refuses any other value, naming the choices", async () => {
    process.env["HTTP_SERVER"] = "uws";
    await expect(listen(harness().gateway, 0, "127.0.0.1")).rejects.toThrow(
      "HTTP_SERVER must be edge or node, got 'uws'",
    );
  });
});
