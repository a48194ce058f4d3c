import net from "node:net";

/**
 * The client side of Latchkey's calls between its own processes: HTTP/1.1 POSTs on kept-alive
 * connections to one server, one exchange at a time per connection, written in one write and read
 * into one buffer. node:http's client builds a ClientRequest, an IncomingMessage (both streams),
 * header lists and agent bookkeeping per call; that was measured as most of what a call costs the
 * caller (docs/performance.md, "The RPC hop between processes"). This reads every answer node:http's
 * client reads from a server that speaks HTTP/1.1 as node:http does (a Content-Length or a chunked
 * body, or a body up to the connection's end): http1-client.test.ts holds it to node:http's client
 * on generated answers. It never pipelines, and never retries: a call whose connection fails fails,
 * as node:http's does. As node:http's agent, it keeps an idle connection no longer than the server's
 * `Keep-Alive: timeout=` hint less a second (so it is not reused just as the server closes it), and
 * an idle connection does not keep the process alive.
 */
export interface Http1Answer {
  status: number;
  /** The Content-Type field's value, or undefined. */
  contentType: string | undefined;
  body: Buffer;
}

export class Http1Error extends Error {}

/** A head longer than this is refused: the servers' own answers carry a handful of short fields. */
const MAX_HEAD = 64 * 1024;
/** Nor a body longer than this (the servers refuse requests over 64 MiB too). */
const MAX_BODY = 64 * 1024 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");
const INCOMPLETE = { needed: 0 } as const;

export class Http1Client {
  private readonly idle: Exchange[] = [];
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /**
   * POSTs `body` after `head` (the request line and fields, each ending in CRLF, without the blank
   * line; Content-Length is added). Settles once the whole answer has come, or fails with an
   * Http1Error when the connection does (the caller maps both to its errors). `abort` is handed a
   * function that ends the exchange (its connection closed, the promise failed with `reason`).
   */
  post(head: string, body: Uint8Array, abort?: (end: (reason: Error) => void) => void): Promise<Http1Answer> {
    if (this.closed) return Promise.reject(new Http1Error("the client is closed"));
    let exchange = this.idle.pop();
    while (exchange !== undefined && !exchange.reusable()) exchange = this.idle.pop();
    exchange ??= new Exchange(this.host, this.port, (x) => {
      if (!this.closed) this.idle.push(x);
      else x.close();
    });
    return exchange.send(`${head}Content-Length: ${body.length}\r\n\r\n`, body, abort);
  }

  /** Closes the idle connections; those in use close when their answer has come. */
  close(): void {
    this.closed = true;
    for (const x of this.idle.splice(0)) x.close();
  }
}

/** One connection and its exchanges, one at a time. */
class Exchange {
  private readonly socket: net.Socket;
  /** The answer's bytes so far, joined only when they may be whole (a long answer is copied once). */
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /** The answer's whole length once its head has said it (Content-Length), else 0. */
  private needed = 0;
  private resolve: ((a: Http1Answer) => void) | undefined;
  private reject: ((e: Error) => void) | undefined;
  private gone = false;
  /** Exchanges sent so far: an abort of an earlier one never reaches the next. */
  private calls = 0;
  /** When an idle connection stops being reused (Date.now() ms), from the server's Keep-Alive hint. */
  private expiresAt = Number.POSITIVE_INFINITY;

  constructor(
    host: string,
    port: number,
    private readonly release: (x: Exchange) => void,
  ) {
    this.socket = net.connect({ host, port, noDelay: true });
    this.socket.on("data", (chunk: Buffer) => this.read(chunk));
    this.socket.on("error", (err) => this.end(new Http1Error(err.message)));
    this.socket.on("close", () => this.end(new Http1Error("the connection closed before the answer")));
    // The server ending its side: the answer so far is whole only when it reads to the end.
    this.socket.on("end", () => this.read(undefined));
  }

  reusable(): boolean {
    return !this.gone && !this.socket.destroyed && this.socket.writable && Date.now() < this.expiresAt;
  }

  send(head: string, body: Uint8Array, abort?: (end: (reason: Error) => void) => void): Promise<Http1Answer> {
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.chunks.length = 0;
      this.size = 0;
      this.needed = 0;
      const call = ++this.calls;
      abort?.((reason) => {
        if (this.calls === call && this.reject !== undefined) this.end(reason);
      });
      if (this.gone) return;
      this.socket.ref();
      // One write: the head and the body together (cork would do the same in two calls).
      const bytes = Buffer.allocUnsafe(Buffer.byteLength(head, "latin1") + body.length);
      const at = bytes.write(head, 0, "latin1");
      bytes.set(body, at);
      this.socket.write(bytes);
    });
  }

  close(): void {
    this.gone = true;
    this.socket.destroy();
  }

  /** Fails the exchange in progress, if any, and closes the connection. */
  private end(reason: Error): void {
    const reject = this.reject;
    this.resolve = undefined;
    this.reject = undefined;
    this.close();
    reject?.(reason);
  }

  /** Adds `chunk` (undefined: the server ended its side) and settles once the answer is whole. */
  private read(chunk: Buffer | undefined): void {
    if (this.resolve === undefined) {
      // Nothing was asked: an idle connection the server writes to or ends is not used again.
      this.close();
      return;
    }
    if (chunk !== undefined) {
      this.chunks.push(chunk);
      this.size += chunk.length;
      if (this.size < this.needed) return;
    }
    let data: Buffer;
    if (this.chunks.length === 1) data = this.chunks[0]!;
    else {
      data = Buffer.concat(this.chunks, this.size);
      this.chunks.length = 0;
      this.chunks.push(data);
    }
    let parsed: ReturnType<typeof parseAnswer>;
    try {
      parsed = parseAnswer(data, chunk === undefined);
    } catch (err) {
      this.end(err as Error);
      return;
    }
    if (!("answer" in parsed)) {
      if (chunk === undefined) this.end(new Http1Error("the connection closed mid-answer"));
      else this.needed = parsed.needed;
      return;
    }
    const resolve = this.resolve;
    this.resolve = undefined;
    this.reject = undefined;
    this.chunks.length = 0;
    if (parsed.close || parsed.rest > 0 || chunk === undefined || parsed.keepAliveMs === 0) this.close();
    else {
      this.expiresAt = Date.now() + parsed.keepAliveMs;
      this.socket.unref();
      this.release(this);
    }
    resolve(parsed.answer);
  }
}

/** An answer read whole, or how many bytes it needs in all (0 while that is not known yet). */
export type Parsed =
  | { answer: Http1Answer; close: boolean; rest: number; keepAliveMs: number }
  | { needed: number };

/**
 * The answer at the start of `data`, or what it still needs. `ended`: the server has ended its
 * side, so a body delimited by the connection's end is whole. `rest` counts bytes after the answer
 * (a server never sends them unasked: the connection is not reused).
 */
export function parseAnswer(data: Buffer, ended: boolean): Parsed {
  const headEnd = data.indexOf(CRLF2);
  if (headEnd < 0) {
    if (data.length > MAX_HEAD) throw new Http1Error("the answer's head is too long");
    return INCOMPLETE;
  }
  const lines = data.toString("latin1", 0, headEnd).split("\r\n");
  const status = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? "");
  if (status === null) throw new Http1Error(`not an HTTP/1.1 answer: ${JSON.stringify(lines[0])}`);
  const code = Number(status[1]);
  let contentType: string | undefined;
  let length: number | undefined;
  let chunked = false;
  let close = lines[0]!.startsWith("HTTP/1.0");
  // How long the connection may be reused: the server's hint less a second, as node:http's agent.
  let keepAliveMs = Number.POSITIVE_INFINITY;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Http1Error(`a malformed field in the answer: ${JSON.stringify(line)}`);
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-type") contentType ??= value;
    else if (name === "content-length") {
      if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value)))
        throw new Http1Error(`a bad Content-Length in the answer: ${value}`);
      length = Number(value);
    } else if (name === "transfer-encoding") {
      if (value.toLowerCase() !== "chunked") throw new Http1Error(`an unknown Transfer-Encoding: ${value}`);
      chunked = true;
    } else if (name === "keep-alive") {
      const hint = /^timeout=(\d+)/.exec(value)?.[1];
      if (hint !== undefined) keepAliveMs = Math.max(0, Number(hint) * 1000 - 1000);
    } else if (name === "connection") {
      const v = value.toLowerCase();
      if (v.split(",").some((t) => t.trim() === "close")) close = true;
    }
  }
  const bodyAt = headEnd + 4;
  // No body at all: 1xx, 204 and 304 answers (POSTs get no 1xx here: no Expect is sent).
  if (code === 204 || code === 304 || (code >= 100 && code < 200)) {
    return {
      answer: { status: code, contentType, body: Buffer.alloc(0) },
      close,
      rest: data.length - bodyAt,
      keepAliveMs,
    };
  }
  if (chunked) {
    const body = dechunk(data, bodyAt);
    if (body === undefined) return INCOMPLETE;
    return {
      answer: { status: code, contentType, body: body.body },
      close,
      rest: data.length - body.end,
      keepAliveMs,
    };
  }
  if (length !== undefined) {
    if (length > MAX_BODY) throw new Http1Error("the answer's body is too long");
    if (data.length < bodyAt + length) return { needed: bodyAt + length };
    return {
      answer: { status: code, contentType, body: data.subarray(bodyAt, bodyAt + length) },
      close,
      rest: data.length - bodyAt - length,
      keepAliveMs,
    };
  }
  // Neither: the body runs to the connection's end.
  if (!ended) {
    if (data.length - bodyAt > MAX_BODY) throw new Http1Error("the answer's body is too long");
    return INCOMPLETE;
  }
  return {
    answer: { status: code, contentType, body: data.subarray(bodyAt) },
    close: true,
    rest: 0,
    keepAliveMs,
  };
}

/** A chunked body from `at`: its bytes and where the message ends, or undefined while incomplete. */
function dechunk(data: Buffer, at: number): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = [];
  let size = 0;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const sizeText = data.toString("latin1", at, lineEnd).split(";")[0]!.trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw new Http1Error(`a bad chunk size: ${sizeText}`);
    const n = Number.parseInt(sizeText, 16);
    at = lineEnd + 2;
    if (n === 0) {
      // Trailers (none from these servers) then the blank line.
      for (;;) {
        const end = data.indexOf("\r\n", at);
        if (end < 0) return undefined;
        if (end === at) return { body: parts.length === 1 ? parts[0]! : Buffer.concat(parts), end: end + 2 };
        at = end + 2;
      }
    }
    size += n;
    if (size > MAX_BODY) throw new Http1Error("the answer's body is too long");
    if (data.length < at + n + 2) return undefined;
    if (data[at + n] !== 13 || data[at + n + 1] !== 10) throw new Http1Error("a chunk without its CRLF");
    parts.push(data.subarray(at, at + n));
    at += n + 2;
  }
}
