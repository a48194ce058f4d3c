import net from "node:net";
import type { PGlite } from "@electric-sql/pglite";

/**
 * Serves one PGlite over the PostgreSQL wire protocol to many connections.
 *
 * PGlite is a single backend, so connections take turns. pglite-socket's own
 * multiplexer takes turns per protocol message, which lets another connection's
 * Parse land between a client's Bind and Execute and destroy its unnamed
 * portal ("portal does not exist") when several clients pipeline at once. Here
 * the unit of a turn is everything a client sends up to a Sync, a simple Query
 * or a Flush, and a client that holds an open transaction (or awaits more after
 * a Flush) keeps the backend until it lets go.
 */
export class PgliteServer {
  private readonly queue: Unit[] = [];
  private owner: Conn | undefined;
  private running = false;
  private server: net.Server | undefined;
  private readonly conns = new Set<Conn>();

  constructor(private readonly db: PGlite) {}

  async listen(port = 0, host = "127.0.0.1"): Promise<number> {
    const server = net.createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, resolve);
    });
    return (server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const c of this.conns) c.socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private accept(socket: net.Socket) {
    socket.setNoDelay(true);
    const conn: Conn = { socket, buffer: Buffer.alloc(0), pending: [], started: false, closed: false };
    this.conns.add(conn);
    socket.on("data", (chunk: Buffer) => {
      conn.buffer = conn.buffer.length === 0 ? chunk : Buffer.concat([conn.buffer, chunk]);
      this.parse(conn);
    });
    socket.on("error", () => socket.destroy());
    socket.on("close", () => void this.release(conn));
  }

  /** Splits the client's bytes into protocol messages and queues each complete turn. */
  private parse(conn: Conn) {
    for (;;) {
      const buf = conn.buffer;
      if (!conn.started) {
        if (buf.length < 8) return;
        const length = buf.readInt32BE(0);
        const code = buf.readInt32BE(4);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          conn.socket.write("N");
          conn.buffer = buf.subarray(8);
          continue;
        }
        if (code === CANCEL_REQUEST) {
          conn.socket.end();
          return;
        }
        if (buf.length < length) return;
        conn.started = true;
        conn.buffer = buf.subarray(length);
        this.enqueue(conn, buf.subarray(0, length), false, false);
        continue;
      }
      if (buf.length < 5) return;
      const total = 1 + buf.readInt32BE(1);
      if (buf.length < total) return;
      const type = buf[0]!;
      conn.pending.push(buf.subarray(0, total));
      conn.buffer = buf.subarray(total);
      if (type === SYNC || type === QUERY || type === FLUSH || type === TERMINATE) {
        const data = conn.pending.length === 1 ? conn.pending[0]! : Buffer.concat(conn.pending);
        conn.pending = [];
        this.enqueue(conn, data, type === FLUSH, type === TERMINATE);
      }
    }
  }

  private enqueue(conn: Conn, data: Buffer, flush: boolean, terminate: boolean) {
    if (terminate) {
      conn.socket.end();
      return;
    }
    this.queue.push({ conn, data: new Uint8Array(data), flush });
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
        if (unit.conn.closed) continue;
        await this.db.runExclusive(() =>
          this.db.execProtocolRawStream(unit.data, {
            onRawData: (out: Uint8Array) => {
              if (!unit.conn.closed) unit.conn.socket.write(out);
            },
          }),
        );
        this.owner = unit.flush || this.db.isInTransaction() ? unit.conn : undefined;
      }
    } finally {
      this.running = false;
    }
  }

  /** A client that leaves mid-transaction has it rolled back, and hands the backend on. */
  private async release(conn: Conn) {
    conn.closed = true;
    this.conns.delete(conn);
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

interface Conn {
  socket: net.Socket;
  buffer: Buffer;
  pending: Buffer[];
  started: boolean;
  closed: boolean;
}

interface Unit {
  conn: Conn;
  data: Uint8Array;
  flush: boolean;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const FLUSH = 0x48; // 'H'
const TERMINATE = 0x58; // 'X'
