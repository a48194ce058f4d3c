import { chmodSync, rmSync } from "node:fs";
import net from "node:net";
import type { PGlite } from "@electric-sql/pglite";

export interface PgliteServerOptions {
  /**
   * Largest message a client may send (its length field), and largest turn (the
   * messages up to a Sync) it may have the server hold. Default 64 MiB: the
   * statements Latchkey sends are far smaller (analytics writes in chunks).
   */
  maxMessageBytes?: number;
}

/** Largest startup packet, PostgreSQL's own bound (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_BYTES = 10_000;
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** Bytes of a client's turns waiting for the backend past which the server stops reading from it. */
const QUEUED_HIGH_WATER = 1024 * 1024;

/**
 * Serves one PGlite over the PostgreSQL wire protocol to many connections, on
 * a Unix socket that only its owner may open (mode 0600): PGlite trusts every
 * connection as superuser, so who can reach the socket can do anything.
 *
 * PGlite is a single backend, so connections take turns. pglite-socket's own
 * multiplexer takes turns per protocol message, which lets another connection's
 * Parse land between a client's Bind and Execute and destroy its unnamed
 * portal ("portal does not exist") when several clients pipeline at once. Here
 * the unit of a turn is everything a client sends up to a Sync, a simple Query
 * or a Flush, and a client that holds an open transaction (or awaits more after
 * a Flush) keeps the backend until it lets go.
 *
 * The one backend is also one session for LISTEN/NOTIFY: a committed NOTIFY
 * comes back in the output of whichever client sent it. The server takes it
 * out of that output and hands it to every client that has sent a LISTEN
 * (clients pick their channels: the postgres client ignores others), so one
 * process can hear what another process's statement announced.
 */
export class PgliteServer {
  private readonly queue: Unit[] = [];
  private owner: Conn | undefined;
  private running = false;
  private server: net.Server | undefined;
  private path: string | undefined;
  private readonly conns = new Set<Conn>();
  private readonly listeners = new Set<Conn>();
  private readonly output = new OutputFilter();
  private readonly maxMessageBytes: number;
  /** The connection whose turn runs: one at a time, so the output callbacks below are made once. */
  private current: Conn | undefined;
  private readonly send = (part: Uint8Array) => {
    const conn = this.current!;
    if (!conn.closed) conn.socket.write(part);
  };
  private readonly heard = (notification: Buffer) => {
    for (const listener of this.listeners) if (!listener.closed) listener.socket.write(notification);
  };
  private readonly raw = {
    onRawData: (out: Uint8Array) => this.output.feed(out, this.send, this.heard),
  };

  constructor(
    private readonly db: PGlite,
    options: PgliteServerOptions = {},
  ) {
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  /**
   * Listens on the Unix socket `path` (a stale one is replaced: the caller
   * makes sure no other server owns it) and makes it readable and writable by
   * its owner only. The directory holding it should be private too (0700).
   */
  async listen(path: string): Promise<void> {
    rmSync(path, { force: true });
    const server = net.createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, resolve);
    });
    this.path = path;
    chmodSync(path, 0o600);
  }

  async close(): Promise<void> {
    for (const c of this.conns) c.socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (this.path) rmSync(this.path, { force: true });
  }

  private accept(socket: net.Socket) {
    const conn: Conn = {
      socket,
      incoming: new Incoming(),
      pending: [],
      pendingBytes: 0,
      queuedBytes: 0,
      paused: false,
      started: false,
      rejected: false,
      closed: false,
    };
    this.conns.add(conn);
    socket.on("data", (chunk: Buffer) => {
      if (conn.rejected) return;
      conn.incoming.push(chunk);
      this.parse(conn);
    });
    socket.on("error", () => socket.destroy());
    socket.on("close", () => void this.release(conn));
  }

  /** Splits the client's bytes into protocol messages and queues each complete turn. */
  private parse(conn: Conn) {
    const incoming = conn.incoming;
    while (!conn.rejected) {
      if (!conn.started) {
        if (incoming.size < 8) return;
        const head = incoming.first(8);
        const length = head.readUInt32BE(0);
        if (length < 8 || length > MAX_STARTUP_BYTES) {
          return this.reject(
            conn,
            `invalid startup packet length ${length} (8 to ${MAX_STARTUP_BYTES} bytes)`,
          );
        }
        const code = head.readInt32BE(4);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          incoming.take(8);
          conn.socket.write("N");
          continue;
        }
        if (code === CANCEL_REQUEST) {
          conn.rejected = true;
          conn.socket.end();
          return;
        }
        if (incoming.size < length) return;
        conn.started = true;
        this.enqueue(conn, incoming.take(length), false, false);
        continue;
      }
      if (incoming.size < 5) return;
      const head = incoming.first(5);
      const length = head.readUInt32BE(1);
      if (length < 4 || length > this.maxMessageBytes) {
        return this.reject(conn, `invalid message length ${length} (4 to ${this.maxMessageBytes} bytes)`);
      }
      const total = 1 + length;
      if (incoming.size < total) return;
      const type = head[0]!;
      const message = incoming.take(total);
      if ((type === QUERY || type === PARSE) && !this.listeners.has(conn) && isListen(message, type)) {
        this.listeners.add(conn);
      }
      conn.pendingBytes += total;
      if (conn.pendingBytes > this.maxMessageBytes) {
        return this.reject(conn, `more than ${this.maxMessageBytes} bytes of messages before a Sync`);
      }
      conn.pending.push(message);
      if (type === SYNC || type === QUERY || type === FLUSH || type === TERMINATE) {
        const data = conn.pending.length === 1 ? conn.pending[0]! : Buffer.concat(conn.pending);
        conn.pending = [];
        conn.pendingBytes = 0;
        this.enqueue(conn, data, type === FLUSH, type === TERMINATE);
      }
    }
  }

  /**
   * Answers a protocol violation (SQLSTATE 08P01, as PostgreSQL does) and
   * closes the connection, without reading or buffering what it announced.
   */
  private reject(conn: Conn, message: string) {
    conn.rejected = true;
    conn.incoming.clear();
    conn.pending = [];
    conn.socket.end(errorResponse(message));
    // A client that keeps its end open is dropped all the same.
    setTimeout(() => conn.socket.destroy(), 5_000).unref();
    void this.release(conn);
  }

  private enqueue(conn: Conn, data: Buffer, flush: boolean, terminate: boolean) {
    const bytes = terminate ? EMPTY : new Uint8Array(data);
    conn.queuedBytes += bytes.length;
    // A client that sends faster than the backend answers waits for it (the socket's own back-pressure).
    if (conn.queuedBytes > QUEUED_HIGH_WATER && !conn.paused) {
      conn.paused = true;
      conn.socket.pause();
    }
    this.queue.push({ conn, data: bytes, flush, terminate });
    void this.pump();
  }

  private async pump() {
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        const index = this.owner ? this.queue.findIndex((u) => u.conn === this.owner) : 0;
        if (index < 0 || this.queue.length === 0) break;
        const unit = this.queue.splice(index, 1)[0]!;
        const conn = unit.conn;
        conn.queuedBytes -= unit.data.length;
        if (conn.paused && conn.queuedBytes <= QUEUED_HIGH_WATER / 2) {
          conn.paused = false;
          conn.socket.resume();
        }
        if (conn.closed) continue;
        // Terminate: once what the client sent before it is answered.
        if (unit.terminate) {
          conn.socket.end();
          continue;
        }
        this.current = conn;
        this.output.reset();
        await this.db.runExclusive(() => this.db.execProtocolRawStream(unit.data, this.raw));
        this.owner = unit.flush || this.db.isInTransaction() ? conn : undefined;
      }
    } finally {
      this.running = false;
    }
  }

  /** A client that leaves mid-transaction has it rolled back, and hands the backend on. */
  private async release(conn: Conn) {
    if (conn.closed) return;
    conn.closed = true;
    this.conns.delete(conn);
    this.listeners.delete(conn);
    for (let i = this.queue.length - 1; i >= 0; i--)
      if (this.queue[i]!.conn === conn) this.queue.splice(i, 1);
    if (this.owner === conn) {
      this.owner = undefined;
      while (this.running) await new Promise((r) => setImmediate(r));
      if (this.db.isInTransaction()) await this.db.exec("ROLLBACK");
    }
    void this.pump();
  }
}

/**
 * A client's unread bytes as the chunks they came in: a message is joined
 * into one buffer only when it spans chunks, and only once it is complete, so
 * a large message arriving in many chunks is copied once, not once a chunk.
 */
class Incoming {
  private chunks: Buffer[] = [];
  size = 0;

  push(chunk: Buffer) {
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  /** A buffer that starts with the next `n` bytes (n <= size). */
  first(n: number): Buffer {
    let head = this.chunks[0]!;
    if (head.length < n) {
      let joined = 0;
      let count = 0;
      while (joined < n) joined += this.chunks[count++]!.length;
      head = Buffer.concat(this.chunks.slice(0, count), joined);
      this.chunks.splice(0, count, head);
    }
    return head;
  }

  /** The next `n` bytes (n <= size), consumed. */
  take(n: number): Buffer {
    const head = this.first(n);
    if (head.length === n) this.chunks.shift();
    else this.chunks[0] = head.subarray(n);
    this.size -= n;
    return head.subarray(0, n);
  }

  clear() {
    this.chunks = [];
    this.size = 0;
  }
}

/**
 * Walks one turn's output message by message and takes NotificationResponses
 * ('A') out of it for `heard`; everything else goes on to `send` as the slices
 * PGlite gave, so a turn without a notification costs no copy.
 */
export class OutputFilter {
  /** Header bytes of the current message seen so far (0 to 5). */
  private head = 0;
  private length = 0;
  /** Body bytes of the current message still to come. */
  private remaining = 0;
  /** The parts of the NotificationResponse being taken out. */
  private notification: Buffer[] | undefined;

  reset() {
    this.head = 0;
    this.length = 0;
    this.remaining = 0;
    this.notification = undefined;
  }

  feed(out: Uint8Array, send: (part: Uint8Array) => void, heard: (notification: Buffer) => void) {
    const n = out.length;
    let i = 0;
    // Where the bytes to send on (or the notification's bytes in this chunk) start.
    let from = 0;
    while (i < n) {
      if (this.remaining > 0) {
        const step = Math.min(this.remaining, n - i);
        i += step;
        this.remaining -= step;
      } else if (this.head === 0 && i + 5 <= n && out[i] !== NOTIFICATION) {
        // The common case: a whole header in this chunk, of a message that goes on.
        this.remaining = ((out[i + 1]! << 24) | (out[i + 2]! << 16) | (out[i + 3]! << 8) | out[i + 4]!) - 4;
        i += 5;
      } else {
        if (this.head === 0) {
          if (out[i] === NOTIFICATION) {
            if (i > from) send(out.subarray(from, i));
            from = i;
            this.notification = [];
          }
          this.length = 0;
        } else {
          this.length = this.length * 256 + out[i]!;
        }
        i++;
        if (++this.head < 5) continue;
        this.head = 0;
        this.remaining = this.length - 4;
      }
      if (this.remaining === 0 && this.notification !== undefined) {
        this.notification.push(Buffer.from(out.subarray(from, i)));
        heard(Buffer.concat(this.notification));
        this.notification = undefined;
        from = i;
      }
    }
    if (this.notification !== undefined) {
      if (n > from) this.notification.push(Buffer.from(out.subarray(from, n)));
    } else if (n > from) {
      send(from === 0 ? out : out.subarray(from, n));
    }
  }
}

/** Whether a Query or Parse message's statement is a LISTEN. */
function isListen(message: Buffer, type: number): boolean {
  let at = 5;
  if (type === PARSE) {
    // Parse: the statement's name comes first.
    at = message.indexOf(0, at) + 1;
    if (at === 0) return false;
  }
  while (at < message.length && isSpace(message[at]!)) at++;
  if (at + LISTEN.length >= message.length) return false;
  for (let k = 0; k < LISTEN.length; k++) if ((message[at + k]! | 0x20) !== LISTEN[k]) return false;
  const next = message[at + LISTEN.length]!;
  return isSpace(next) || next === 0x22; // LISTEN "channel"
}

const isSpace = (b: number) => b === 0x20 || (b >= 0x09 && b <= 0x0d);

/** An ErrorResponse: FATAL protocol_violation with `message`. */
function errorResponse(message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C08P01\0M${message}\0\0`);
  const head = Buffer.alloc(5);
  head.write("E", 0, "latin1");
  head.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([head, fields]);
}

interface Conn {
  socket: net.Socket;
  incoming: Incoming;
  /** Messages of the turn being read, up to its Sync. */
  pending: Buffer[];
  pendingBytes: number;
  /** Bytes of this client's turns waiting in the queue. */
  queuedBytes: number;
  paused: boolean;
  started: boolean;
  /** Answered a protocol violation: what it sends from then on is dropped. */
  rejected: boolean;
  closed: boolean;
}

interface Unit {
  conn: Conn;
  data: Uint8Array;
  flush: boolean;
  terminate: boolean;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const PARSE = 0x50; // 'P'
const FLUSH = 0x48; // 'H'
const TERMINATE = 0x58; // 'X'
const NOTIFICATION = 0x41; // 'A'
const EMPTY = new Uint8Array(0);
const LISTEN = [...Buffer.from("listen")];
