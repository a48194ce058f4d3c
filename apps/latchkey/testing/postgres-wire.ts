import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import net from "node:net";

/**
 * The TCP ports a process listens on (Linux: its socket inodes matched against
 * /proc/net/tcp and tcp6), for tests that prove the embedded database opens none.
 */
export function listeningTcpPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // The descriptor closed while we looked.
    }
  }
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is HOST:PORT in hex, st 0A is LISTEN, the inode is the tenth column.
      if (cols.length < 10 || cols[3] !== "0A" || !inodes.has(cols[9]!)) continue;
      ports.add(Number.parseInt(cols[1]!.split(":")[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** The Unix socket a `postgres://…?host=/dir` URL names (libpq's form), or its TCP host and port. */
export function socketOf(url: string): { path: string } | { host: string; port: number } {
  const parsed = new URL(url);
  const port = Number(parsed.port || 5432);
  const dir = parsed.searchParams.get("host");
  if (dir?.startsWith("/")) return { path: `${dir}/.s.PGSQL.${port}` };
  return { host: parsed.hostname, port };
}

/** A PostgreSQL startup packet (protocol 3.0) for user postgres. */
export function startupPacket(): Buffer {
  const body = Buffer.from("\0\0\0\0user\0postgres\0database\0postgres\0\0");
  body.writeInt32BE(196608, 0);
  const length = Buffer.alloc(4);
  length.writeInt32BE(4 + body.length, 0);
  return Buffer.concat([length, body]);
}

/**
 * Opens a raw connection to the server of `url`, writes `bytes` and collects
 * what comes back until the server closes the connection; rejects when it is
 * still open after `withinMs`.
 */
export function untilClosed(url: string, bytes: Buffer[], withinMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketOf(url));
    const received: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open after ${withinMs} ms (received ${Buffer.concat(received).length} bytes)`));
    }, withinMs);
    socket.on("connect", () => {
      for (const b of bytes) socket.write(b);
    });
    socket.on("data", (d) => received.push(d));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(received));
    });
  });
}
