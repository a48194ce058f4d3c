import { METHODS, STATUS_CODES } from "node:http";
import net from "node:net";
import { listening } from "@latchkey/runtime";
import type { Exchange, Gateway } from "./gateway.ts";
import { checkIntervalMs, HTTP_LIMITS, type HttpLimits } from "./http-limits.ts";

/**
 * The gateway's HTTP/1.1 server, on a plain TCP socket. node:http spends a
 * large share of its time per request on objects the gateway never reads (an
 * IncomingMessage and a ServerResponse, both streams, per request; the measured
 * gain is in docs/architecture.md); this server reads a request into a buffer and writes its answer in one write.
 *
 * It reads no request node:http (llhttp) would refuse, and reads every
 * request it accepts as node:http does: testing/edge-differential.ts holds it to that
 * on generated and mutated requests. It is stricter in places, each harmless
 * and listed in gateway/README.md: a request line of one space between its
 * parts and an origin-form target, HTTP/1.0 or 1.1 only, one Host, one
 * Content-Length or one `Transfer-Encoding: chunked` (never both: the
 * ambiguity request smuggling lives on), no obsolete line folding. What it
 * refuses answers 400 (431 for a head over maxHeaderBytes, 417 for an unknown
 * Expect) and closes the connection. `Expect: 100-continue` is honoured.
 * Requests on one connection are answered in order, one at a time, and no
 * more are read while the answers wait for a client that does not read them.
 *
 * Limits (http-limits.ts): a request's head must arrive within
 * headersTimeoutMs of its first byte (or of the connection's start), the
 * whole request within requestTimeoutMs, and its body at minBodyRate after a
 * grace of headersTimeoutMs, else 408; an idle connection closes after
 * keepAliveTimeoutMs; beyond maxConnections a new connection closes unread.
 *
 * HTTP_SERVER=node serves through node:http instead (node-server.ts).
 */
export type EdgeOptions = HttpLimits;

export interface EdgeServer {
  port: number;
  close(): Promise<void>;
}

export async function listenEdge(
  gateway: Gateway,
  port: number,
  host: string,
  options: Partial<HttpLimits> = {},
): Promise<EdgeServer> {
  const settings = { ...HTTP_LIMITS, ...options };
  const connections = new Set<Connection>();
  let closing = false;
  // Half open: a client may end its side after a request and still read the answer (node:http allows it too).
  const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    if (closing) return void socket.destroy();
    const connection = new Connection(socket, gateway, settings, () => connections.delete(connection));
    connections.add(connection);
  });
  // Over the cap a new connection is closed as it is accepted, before anything is read from it.
  server.maxConnections = settings.maxConnections;
  // Timeouts checked for every connection at once, not a timer per request.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const c of connections) c.expire(now);
  }, checkIntervalMs(settings));
  sweep.unref();
  return {
    port: await listening(server, port, host),
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
// llhttp's methods; CONNECT asks for a tunnel, which node:http closes the connection on unread.
const KNOWN_METHODS = new Set(METHODS.filter((m) => m !== "CONNECT"));
// Field values: visible ASCII, obs-text, spaces and tabs; no other control character.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what it is for
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
// As llhttp: digits, then spaces only (a tab after them is refused); 15 digits at most, leading zeros aside.
const CONTENT_LENGTH = /^[ \t]*0*([0-9]{1,15}) *$/;
const CHUNKED = /^[ \t]*chunked *$/i;
// A chunk size of at most 8 hex digits (leading zeros aside), then extensions `;name[=token|"quoted"]`
// with no whitespace, as llhttp reads them; an extension llhttp reads but with an empty name or value is refused.
const CHUNK_SIZE =
  /^0*([0-9A-Fa-f]{1,8})(?:;[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:=(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[\t !#-[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"))?)*$/;

/** The head of one request, as far as the gateway and the framing need it. */
class Head {
  method = "";
  url = "";
  minor = 1;
  host = false;
  authorization: string | undefined = undefined;
  accept: string | undefined = undefined;
  forwardedFor: string | undefined = undefined;
  contentLength = -1;
  chunked = false;
  close = false;
  keepAlive = false;
  /** Connection: upgrade with an Upgrade header: what follows would be another protocol. */
  upgrade = false;
  expect: string | undefined = undefined;
  /** The head as received, read again only for a field none of the above holds (forward-auth's). */
  text = "";
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
  /** When the request being read began (its first byte; the connection's start for the first), or -1 between requests. */
  private startedAt: number;
  private idleSince: number;
  /** Bytes read off the socket so far, and where they stood when the sweep first saw the current body (-1: not yet). */
  private received = 0;
  private bodyMark = 0;
  private bodySeenAt = -1;
  private closeAfterAnswer = false;
  /** The client ended its side: the requests it sent are answered, then the connection closes. */
  private clientEnded = false;
  /** Not reading until the client has read the answers written so far. */
  private waitingDrain = false;
  private parsing = false;

  constructor(
    readonly socket: net.Socket,
    private readonly gateway: Gateway,
    private readonly options: HttpLimits,
    private readonly forget: () => void,
  ) {
    this.startedAt = this.idleSince = Date.now();
    socket.on("data", (data: Buffer) => this.read(data));
    socket.on("end", () => {
      this.clientEnded = true;
      if (this.state !== "busy") this.parse();
    });
    socket.on("drain", () => {
      if (!this.waitingDrain) return;
      this.waitingDrain = false;
      if (this.state === "busy" || this.state === "closed") return;
      this.socket.resume();
      this.parse();
    });
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

  /**
   * The sweep: a request too slow to arrive answers 408; a connection idle too long closes, and so
   * does one whose client has not read its answers for requestTimeoutMs.
   */
  expire(now: number): void {
    if (this.state === "busy" || this.state === "closed") return;
    const o = this.options;
    if (this.waitingDrain) {
      if (now - this.idleSince > o.requestTimeoutMs) this.socket.destroy();
      return;
    }
    if (this.startedAt === -1) {
      if (now - this.idleSince > o.keepAliveTimeoutMs) this.end();
      return;
    }
    const elapsed = now - this.startedAt;
    if (this.state === "head") {
      if (elapsed > o.headersTimeoutMs) this.refuse(408);
      return;
    }
    if (elapsed > o.requestTimeoutMs) {
      this.refuse(408);
      return;
    }
    // The body's rate, from when the sweep first saw it: each minBodyRate bytes buy a second past the grace.
    if (this.bodySeenAt === -1) {
      this.bodySeenAt = now;
      this.bodyMark = this.received - (this.buffer === null ? 0 : this.buffer.length);
      return;
    }
    const late = now - this.bodySeenAt - o.headersTimeoutMs;
    if (late > 0 && (this.received - this.bodyMark) * 1000 < o.minBodyRate * late) this.refuse(408);
  }

  private read(data: Buffer): void {
    if (this.state === "closed") return;
    this.received += data.length;
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

  /**
   * Reads requests off the buffer and hands each to the gateway, one at a time; none while the
   * answers already written wait for the client to read them.
   */
  private parse(): void {
    if (this.parsing) return;
    this.parsing = true;
    try {
      while (this.buffer !== null && this.state !== "busy" && this.state !== "closed") {
        if (this.state === "head" && this.socket.writableNeedDrain) {
          this.waitingDrain = true;
          this.socket.pause();
          break;
        }
        if (!this.step()) break;
      }
      // The client sent all it will and no whole request is left: done.
      if (this.clientEnded && this.state !== "busy" && this.state !== "closed" && !this.waitingDrain)
        this.end();
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
        // Empty lines before a request line are skipped, as RFC 9112 (2.2) asks and llhttp does.
        if (buffer[0] === 0x0d || buffer[0] === 0x0a) {
          let at = 1;
          while (at < buffer.length && (buffer[at] === 0x0d || buffer[at] === 0x0a)) at++;
          this.take(at);
          return true;
        }
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
        // Trailer fields are checked as header fields are, then read past; an empty line ends the body.
        const end = this.lineEnd(buffer);
        if (end === -1) {
          if (buffer.length > this.options.maxHeaderBytes) throw new Refusal(431);
          return false;
        }
        if (end > 0) {
          // Trailers count against the header limit, so a body cannot go on forever in them.
          this.trailerSize += end + 2;
          if (this.trailerSize > this.options.maxHeaderBytes) throw new Refusal(431);
          const name = checkField(buffer.toString("latin1", 0, end)).toLowerCase();
          // As llhttp: framing named again after the body is refused.
          if (name === "content-length" || name === "transfer-encoding") throw new Refusal(400);
          this.take(end + 2);
          return true;
        }
        this.take(2);
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
    this.bodySeenAt = -1;
    const head = this.head;
    // The rest of a body not read cannot be told from the next request; after an upgrade, what
    // follows is not HTTP/1.1 (node:http reads no further either).
    if (body === "too large" || head.upgrade) this.closeAfterAnswer = true;
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
    const now = Date.now();
    this.startedAt = this.buffer === null ? -1 : now;
    this.idleSince = now;
    // Held while the answer was in flight (read()), unless the client is not reading its answers.
    if (!this.waitingDrain && this.socket.isPaused()) this.socket.resume();
    // A request that arrived meanwhile; parse() is already running when the answer came synchronously.
    if (this.buffer !== null || this.clientEnded) this.parse();
  }

  private write(text: string): void {
    // A client that does not read its answers is not read from either, until it does ("drain").
    if (!this.socket.write(text) && !this.waitingDrain) {
      this.waitingDrain = true;
      this.socket.pause();
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

/** A trailer field line, checked as header fields are; gives its name. */
function checkField(line: string): string {
  const colon = line.indexOf(":");
  const name = line.slice(0, colon);
  if (colon <= 0 || !TOKEN.test(name) || BAD_VALUE.test(line.slice(colon + 1))) throw new Refusal(400);
  return name;
}

function parseHead(text: string): Head {
  const head = new Head();
  head.text = text;
  const lines = text.split("\r\n");
  const request = REQUEST_LINE.exec(lines[0]!);
  if (request === null || !KNOWN_METHODS.has(request[1]!)) throw new Refusal(400);
  head.method = request[1]!;
  head.url = request[2]!;
  head.minor = request[3] === "0" ? 0 : 1;
  let transferEncoding = false;
  let connectionUpgrade = false;
  let upgradeHeader = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Refusal(400);
    const name = line.slice(0, colon);
    // No space before the colon, no folded line (a line that starts with a space has no token).
    if (!TOKEN.test(name)) throw new Refusal(400);
    const raw = line.slice(colon + 1);
    if (BAD_VALUE.test(raw)) throw new Refusal(400);
    switch (name.toLowerCase()) {
      case "host":
        if (head.host) throw new Refusal(400);
        head.host = true;
        break;
      case "authorization":
        // As node:http: a repeated Authorization is dropped, the first one stands.
        head.authorization ??= trim(raw);
        break;
      case "accept": {
        const value = trim(raw);
        head.accept = head.accept === undefined ? value : `${head.accept}, ${value}`;
        break;
      }
      case "x-forwarded-for": {
        // As node:http: repeated fields joined in order, so the rightmost hop stays rightmost.
        const value = trim(raw);
        head.forwardedFor = head.forwardedFor === undefined ? value : `${head.forwardedFor}, ${value}`;
        break;
      }
      case "content-length": {
        // Once only, even with the same value, as llhttp.
        const match = CONTENT_LENGTH.exec(raw);
        if (match === null || head.contentLength !== -1) throw new Refusal(400);
        head.contentLength = Number(match[1]);
        break;
      }
      case "transfer-encoding":
        if (transferEncoding || !CHUNKED.test(raw)) throw new Refusal(400);
        transferEncoding = true;
        break;
      case "connection":
        for (const option of raw.toLowerCase().split(",")) {
          const o = trim(option);
          if (o === "close") head.close = true;
          else if (o === "keep-alive") head.keepAlive = true;
          else if (o === "upgrade") connectionUpgrade = true;
        }
        break;
      case "upgrade":
        upgradeHeader = true;
        break;
      case "expect":
        head.expect = trim(raw);
        break;
    }
  }
  if (head.minor === 1 && !head.host) throw new Refusal(400);
  head.upgrade = connectionUpgrade && upgradeHeader;
  if (transferEncoding) {
    // chunked is the only coding read; with a Content-Length beside it the framing is ambiguous.
    if (head.contentLength !== -1 || head.minor === 0) throw new Refusal(400);
    head.chunked = true;
  }
  return head;
}

/**
 * A head parseHead accepted, as its fields by lower-case name, repeated ones joined with ", " as
 * node:http joins them. Only forward-auth reads fields this way, off the API's hot path.
 */
function fieldsOf(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  const lines = text.split("\r\n");
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).toLowerCase();
    const value = trim(line.slice(colon + 1));
    const before = fields.get(name);
    // As node:http: Cookie fields joined with "; ", the others with ", ".
    fields.set(name, before === undefined ? value : `${before}${name === "cookie" ? "; " : ", "}${value}`);
  }
  return fields;
}

const trim = (value: string) => value.replace(/^[ \t]+|[ \t]+$/g, "");

/** A request read by the edge, answered on its connection. */
class EdgeExchange implements Exchange {
  timing: Exchange["timing"] = undefined;
  /** The head's fields by lower-case name, read once when forward-auth first asks for one. */
  private fields: Map<string, string> | undefined = undefined;
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
  get peer() {
    // Read while the request is dispatched, its socket open; node:net keeps it once read.
    return this.connection.socket.remoteAddress;
  }
  get forwardedFor() {
    return this.head.forwardedFor;
  }
  header(name: string): string | undefined {
    this.fields ??= fieldsOf(this.head.text);
    return this.fields.get(name);
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
