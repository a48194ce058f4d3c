import { STATUS_CODES } from "node:http";
import net from "node:net";
import type { Exchange, Gateway } from "./gateway.ts";

/**
 * The gateway's HTTP/1.1 server, on a plain TCP socket. node:http spends about
 * 6 of its 15 µs per request here on objects the gateway never reads (an
 * IncomingMessage and a ServerResponse, both streams, per request); this
 * server reads a request into a buffer and writes its answer in one write.
 *
 * It accepts the requests the gateway serves and refuses the rest, as
 * node:http does, strictly: a request line and CRLF-terminated header lines of
 * ASCII tokens and visible values (no obsolete line folding), Host required on
 * HTTP/1.1, a body framed by one Content-Length or by chunked
 * Transfer-Encoding, never both (the ambiguity request smuggling lives on).
 * Anything else answers 400 (431 for a header block over maxHeaderBytes, 417
 * for an unknown Expect) and closes the connection. `Expect: 100-continue` is
 * honoured. Requests on one connection are answered in order, one at a time.
 * Timeouts are node:http's: a request's headers must arrive within
 * headersTimeoutMs and the whole request within requestTimeoutMs (else 408),
 * and an idle connection closes after keepAliveTimeoutMs.
 *
 * HTTP_SERVER=node serves through node:http instead (listen in gateway.ts).
 */
export interface EdgeOptions {
  maxHeaderBytes: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

const EDGE_DEFAULTS: EdgeOptions = {
  // node:http's defaults, and its keep-alive as the gateway set it.
  maxHeaderBytes: 16 * 1024,
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 65_000,
};

export interface EdgeServer {
  port: number;
  close(): Promise<void>;
}

export async function listenEdge(
  gateway: Gateway,
  port: number,
  host: string,
  options: Partial<EdgeOptions> = {},
): Promise<EdgeServer> {
  const settings = { ...EDGE_DEFAULTS, ...options };
  const connections = new Set<Connection>();
  let closing = false;
  // Half open: a client may end its side after a request and still read the answer (node:http allows it too).
  const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    if (closing) return void socket.destroy();
    const connection = new Connection(socket, gateway, settings, () => connections.delete(connection));
    connections.add(connection);
  });
  // Timeouts checked once a second for every connection, not a timer per request.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const c of connections) c.expire(now);
  }, 1_000);
  sweep.unref();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        clearInterval(sweep);
        server.close(() => resolve());
        // Idle connections close now; one with a request in flight after its answer.
        for (const c of connections) c.closeWhenIdle();
      }).then(() => gateway.close()),
  };
}

const CRLF = 0x0a0d; // "\r\n" read as a little-endian uint16
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\/[\x21-\x7e]*) HTTP\/1\.([01])$/;
// Field values: visible ASCII, obs-text, spaces and tabs; no other control character.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what it is for
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,8})(?:[ \t]*;.*)?$/;

/** The head of one request, as far as the gateway and the framing need it. */
class Head {
  method = "";
  url = "";
  minor = 1;
  host = false;
  authorization: string | undefined = undefined;
  accept: string | undefined = undefined;
  contentLength = -1;
  chunked = false;
  close = false;
  keepAlive = false;
  expect: string | undefined = undefined;
}

/** A refusal of a request the server cannot or will not read: answered, then the connection closes. */
class Refusal {
  constructor(readonly status: number) {}
}

type State = "head" | "body" | "chunk-size" | "chunk-data" | "trailers" | "busy" | "closed";

class Connection {
  /** Bytes received and not yet read. */
  private buffer: Buffer | null = null;
  /** Where `buffer` lives once it holds more than one read: grown by doubling, so a trickled request costs linear time. */
  private store: Buffer | null = null;
  /** How far into `buffer` the line or head being looked for is known not to end. */
  private scanned = 0;
  private state: State = "head";
  private head = new Head();
  /** The chunks of a chunked body so far. */
  private chunks: Buffer[] = [];
  private bodySize = 0;
  private trailerSize = 0;
  private chunkLeft = 0;
  /** When the request being read began (its first byte), or -1 between requests. */
  private startedAt = -1;
  private idleSince = Date.now();
  private closeAfterAnswer = false;
  private parsing = false;

  constructor(
    private readonly socket: net.Socket,
    private readonly gateway: Gateway,
    private readonly options: EdgeOptions,
    private readonly forget: () => void,
  ) {
    socket.on("data", (data: Buffer) => this.read(data));
    // The client sent all it will: the request in flight is answered, then the connection ends.
    socket.on("end", () => this.closeWhenIdle());
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      this.state = "closed";
      this.forget();
    });
  }

  /** With a request in flight: closes after its answer. Otherwise now, a request half read with it. */
  closeWhenIdle(): void {
    if (this.state === "busy") this.closeAfterAnswer = true;
    else this.end();
  }

  /** The sweep: a request too slow to arrive answers 408; a connection idle too long closes. */
  expire(now: number): void {
    if (this.state === "busy" || this.state === "closed") return;
    if (this.startedAt === -1) {
      if (now - this.idleSince > this.options.keepAliveTimeoutMs) this.end();
      return;
    }
    const limit = this.state === "head" ? this.options.headersTimeoutMs : this.options.requestTimeoutMs;
    if (now - this.startedAt > limit) this.refuse(408);
  }

  private read(data: Buffer): void {
    if (this.state === "closed") return;
    if (this.startedAt === -1) this.startedAt = Date.now();
    this.buffer = this.buffer === null ? data : this.append(this.buffer, data);
    // A client that sends ahead while an answer is in flight: held, within what one request may take.
    if (this.state === "busy") {
      if (this.buffer.length > this.options.maxHeaderBytes + this.gateway.maxBodyBytes + 65_536)
        this.socket.pause();
      return;
    }
    this.parse();
  }

  /** `current` with `data` after it, in `store` (copied there once, then appended in place). */
  private append(current: Buffer, data: Buffer): Buffer {
    const length = current.length + data.length;
    const store = this.store;
    if (store !== null && current.buffer === store.buffer) {
      const at = current.byteOffset - store.byteOffset;
      if (at + length <= store.length) {
        data.copy(store, at + current.length);
        return store.subarray(at, at + length);
      }
    }
    // At least 8 KiB: never from Buffer's shared pool, so the store's memory is its own.
    const grown = Buffer.allocUnsafe(Math.max(2 * length, 8192));
    current.copy(grown, 0);
    data.copy(grown, current.length);
    this.store = grown;
    return grown.subarray(0, length);
  }

  /** Reads requests off the buffer and hands each to the gateway, one at a time. */
  private parse(): void {
    if (this.parsing) return;
    this.parsing = true;
    try {
      while (this.buffer !== null && this.state !== "busy" && this.state !== "closed") {
        if (!this.step()) break;
      }
    } catch (err) {
      if (err instanceof Refusal) this.refuse(err.status);
      else throw err;
    } finally {
      this.parsing = false;
    }
  }

  /** One step of the request being read; false when it needs more bytes. */
  private step(): boolean {
    const buffer = this.buffer!;
    switch (this.state) {
      case "head": {
        const end = buffer.indexOf("\r\n\r\n", this.scanned);
        if (end === -1) {
          if (buffer.length > this.options.maxHeaderBytes) throw new Refusal(431);
          this.scanned = Math.max(0, buffer.length - 3);
          return false;
        }
        if (end > this.options.maxHeaderBytes) throw new Refusal(431);
        this.head = parseHead(buffer.toString("latin1", 0, end));
        this.take(end + 4);
        return this.beginBody();
      }
      case "body": {
        if (buffer.length < this.head.contentLength) return false;
        const body = buffer.subarray(0, this.head.contentLength);
        this.take(this.head.contentLength);
        this.dispatch(body);
        return true;
      }
      case "chunk-size": {
        const end = this.lineEnd(buffer);
        if (end === -1) {
          if (buffer.length > 1024) throw new Refusal(400);
          return false;
        }
        const match = CHUNK_SIZE.exec(buffer.toString("latin1", 0, end));
        if (match === null) throw new Refusal(400);
        this.take(end + 2);
        this.chunkLeft = Number.parseInt(match[1]!, 16);
        if (this.chunkLeft === 0) {
          this.state = "trailers";
          return true;
        }
        this.bodySize += this.chunkLeft;
        if (this.bodySize > this.gateway.maxBodyBytes) {
          this.dispatch("too large");
          return false;
        }
        this.state = "chunk-data";
        return true;
      }
      case "chunk-data": {
        if (buffer.length < this.chunkLeft + 2) return false;
        if (buffer.readUInt16LE(this.chunkLeft) !== CRLF) throw new Refusal(400);
        this.chunks.push(buffer.subarray(0, this.chunkLeft));
        this.take(this.chunkLeft + 2);
        this.state = "chunk-size";
        return true;
      }
      case "trailers": {
        // Trailer fields are read past, not used; an empty line ends the body.
        const end = this.lineEnd(buffer);
        if (end === -1) {
          if (buffer.length > this.options.maxHeaderBytes) throw new Refusal(431);
          return false;
        }
        this.take(end + 2);
        if (end > 0) {
          // Trailers count against the header limit, so a body cannot go on forever in them.
          this.trailerSize += end + 2;
          if (this.trailerSize > this.options.maxHeaderBytes) throw new Refusal(431);
          return true;
        }
        const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
        this.chunks = [];
        this.dispatch(body);
        return true;
      }
      default:
        return false;
    }
  }

  /** After the head: answers `Expect`, then reads the body its framing announces (or none). */
  private beginBody(): boolean {
    const head = this.head;
    const tooLarge = head.contentLength > this.gateway.maxBodyBytes;
    if (head.expect !== undefined) {
      if (head.expect.toLowerCase() !== "100-continue") throw new Refusal(417);
      // A body that will be refused is not asked for: the client gets the 413 instead.
      if (head.minor === 1 && !tooLarge && (head.chunked || head.contentLength > 0))
        this.write("HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (head.chunked) {
      this.chunks = [];
      this.bodySize = 0;
      this.trailerSize = 0;
      this.state = "chunk-size";
      return true;
    }
    if (tooLarge) {
      this.dispatch("too large");
      return false;
    }
    if (head.contentLength <= 0) {
      this.dispatch(EMPTY);
      return true;
    }
    this.state = "body";
    return true;
  }

  private take(n: number): void {
    const buffer = this.buffer!;
    this.buffer = n === buffer.length ? null : buffer.subarray(n);
    this.scanned = 0;
  }

  /** The index of the first CRLF, or -1 (and how far is known to have none); a bare LF is refused. */
  private lineEnd(buffer: Buffer): number {
    const lf = buffer.indexOf(0x0a, this.scanned);
    if (lf === -1) {
      this.scanned = buffer.length;
      return -1;
    }
    if (lf === 0 || buffer[lf - 1] !== 0x0d) throw new Refusal(400);
    return lf - 1;
  }

  private dispatch(body: Buffer | "too large"): void {
    this.state = "busy";
    const head = this.head;
    // The rest of a body not read cannot be told from the next request.
    if (body === "too large") this.closeAfterAnswer = true;
    try {
      this.gateway.exchange(new EdgeExchange(this, head), body);
    } catch {
      // The gateway answers its own errors; one that escapes it must not take the process down.
      if (this.state === "busy") this.refuse(500);
    }
  }

  /** The answer to the request in flight: one write, then the next request, or the end. */
  answer(
    head: Head,
    status: number,
    contentType: string,
    body: string,
    headers?: Readonly<Record<string, string>>,
  ) {
    if (this.state !== "busy") return;
    let close = this.closeAfterAnswer || head.close || (head.minor === 0 && !head.keepAlive);
    let extra = "";
    if (headers !== undefined) {
      for (const name in headers) {
        const value = headers[name]!;
        if (name === "connection" && value === "close") close = true;
        else extra += `${name}: ${value}\r\n`;
      }
    }
    if (close) extra += "connection: close\r\n";
    else if (head.minor === 0) extra += "connection: keep-alive\r\n";
    const length = Buffer.byteLength(body);
    const text = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\ncontent-type: ${contentType}\r\ncontent-length: ${length}\r\ndate: ${httpDate()}\r\n${extra}\r\n`;
    this.write(head.method === "HEAD" ? text : text + body);
    if (close) return this.end();
    this.state = "head";
    this.startedAt = this.buffer === null ? -1 : Date.now();
    this.idleSince = Date.now();
    if (this.socket.isPaused()) this.socket.resume();
    // A request that arrived meanwhile; parse() is already running when the answer came synchronously.
    if (this.buffer !== null) this.parse();
  }

  private write(text: string): void {
    // A client that does not read its answers is not read from either.
    if (!this.socket.write(text)) {
      this.socket.pause();
      this.socket.once("drain", () => {
        if (this.state !== "busy") this.socket.resume();
      });
    }
  }

  private refuse(status: number): void {
    if (this.state === "closed") return;
    this.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\ncontent-length: 0\r\ndate: ${httpDate()}\r\nconnection: close\r\n\r\n`,
    );
    this.end();
  }

  private end(): void {
    this.state = "closed";
    this.buffer = null;
    this.socket.end();
    // A client that never reads its end must not hold the socket.
    this.socket.setTimeout(5_000, () => this.socket.destroy());
  }
}

const EMPTY = Buffer.alloc(0);

function parseHead(text: string): Head {
  const head = new Head();
  const lines = text.split("\r\n");
  const request = REQUEST_LINE.exec(lines[0]!);
  if (request === null) throw new Refusal(400);
  head.method = request[1]!;
  head.url = request[2]!;
  head.minor = request[3] === "0" ? 0 : 1;
  let transferEncoding: string | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Refusal(400);
    const name = line.slice(0, colon);
    // No space before the colon, no folded line (a line that starts with a space has no token).
    if (!TOKEN.test(name)) throw new Refusal(400);
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (BAD_VALUE.test(value)) throw new Refusal(400);
    switch (name.toLowerCase()) {
      case "host":
        if (head.host) throw new Refusal(400);
        head.host = true;
        break;
      case "authorization":
        // As node:http: a repeated Authorization is dropped, the first one stands.
        head.authorization ??= value;
        break;
      case "accept":
        head.accept = head.accept === undefined ? value : `${head.accept}, ${value}`;
        break;
      case "content-length": {
        if (!/^[0-9]{1,15}$/.test(value)) throw new Refusal(400);
        const length = Number(value);
        if (head.contentLength !== -1 && head.contentLength !== length) throw new Refusal(400);
        head.contentLength = length;
        break;
      }
      case "transfer-encoding":
        if (transferEncoding !== undefined) throw new Refusal(400);
        transferEncoding = value;
        break;
      case "connection":
        for (const option of value.toLowerCase().split(",")) {
          const o = option.trim();
          if (o === "close") head.close = true;
          else if (o === "keep-alive") head.keepAlive = true;
        }
        break;
      case "expect":
        head.expect = value;
        break;
    }
  }
  if (head.minor === 1 && !head.host) throw new Refusal(400);
  if (transferEncoding !== undefined) {
    // chunked is the only coding read; with a Content-Length beside it the framing is ambiguous.
    if (transferEncoding.toLowerCase() !== "chunked" || head.contentLength !== -1 || head.minor === 0)
      throw new Refusal(400);
    head.chunked = true;
  }
  return head;
}

/** A request read by the edge, answered on its connection. */
class EdgeExchange implements Exchange {
  timing: Exchange["timing"] = undefined;
  private answered = false;
  constructor(
    private readonly connection: Connection,
    private readonly head: Head,
  ) {}
  get method() {
    return this.head.method;
  }
  get url() {
    return this.head.url;
  }
  get authorization() {
    return this.head.authorization;
  }
  get accept() {
    return this.head.accept;
  }
  reply(status: number, contentType: string, body: string, headers?: Readonly<Record<string, string>>) {
    if (this.answered) return;
    this.answered = true;
    this.connection.answer(this.head, status, contentType, body, headers);
  }
}

// The Date header, made at most once a second.
let dateText = "";
let dateAt = 0;
function httpDate(): string {
  const now = Date.now();
  if (now - dateAt >= 1_000) {
    dateAt = now - (now % 1_000);
    dateText = new Date(dateAt).toUTCString();
  }
  return dateText;
}
