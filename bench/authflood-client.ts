import { randomBytes } from "node:crypto";
import net from "node:net";

/**
 * The other client of BENCH=authflood, in a process of its own: POSTs keys.verifyKey at RATE
 * requests per second to URL, each with a new root key (FLOOD=distinct: lk_root_ and 32 random
 * characters, the shape of a real one, so each costs the gateway a lookup) or always the same
 * unknown one (FLOOD=same); or (FLOOD=keys, for bench/soak-attacker.ts) with the valid root key AUTH
 * and a new random key string in each body, each a key-cache miss and a lookup. Raw keep-alive sockets with pipelined requests written every 10 ms,
 * so that the flood costs the machine little beyond what the server spends answering it
 * (autocannon's pacing cost more CPU than the requests). Prints "flooding" once connected; on
 * SIGTERM prints {sent, seconds, statuses} as JSON and exits.
 */
const url = new URL(process.env["URL"]!);
const rate = Number(process.env["RATE"] ?? 10_000);
const same = process.env["FLOOD"] === "same";
const randomKeys = process.env["FLOOD"] === "keys";
const CONNECTIONS = 16;
/** Requests a connection may have unanswered; past it a tick's share is skipped, not queued. */
const MAX_OUTSTANDING = 500;
const TICK_MS = 10;

const body = '{"key":"sk_flood"}';
const keyBody = (key: string) => `{"key":"sk_${key}"}`;
// X-Forwarded-For, when the flood stands for a client behind a proxy Latchkey trusts (the soak's attacker).
const forwarded = process.env["SOAK_CLIENT_ADDRESS"]
  ? `x-forwarded-for: ${process.env["SOAK_CLIENT_ADDRESS"]}\r\n`
  : "";
const head = randomKeys
  ? `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${keyBody("x".repeat(32)).length}\r\n${forwarded}authorization: Bearer ${process.env["AUTH"]}\r\n\r\n{"key":"sk_`
  : `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n${forwarded}authorization: Bearer lk_root_`;
const tail = randomKeys ? '"}' : `\r\n\r\n${body}`;
const fixed = randomBytes(24).toString("base64url");

const statuses: Record<string, number> = {};
let sent = 0;
let skipped = 0;

interface Conn {
  socket: net.Socket;
  outstanding: number;
  carry: string;
}

function connect(): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const conn: Conn = { socket, outstanding: 0, carry: "" };
    socket.setNoDelay(true);
    socket.setEncoding("latin1");
    socket.once("connect", () => resolve(conn));
    socket.once("error", reject);
    socket.on("data", (chunk: string) => {
      // Count status lines; one may be split across chunks, so the last few characters carry over.
      const text = conn.carry + chunk;
      let at = text.indexOf("HTTP/1.1 ");
      let end = 0;
      while (at !== -1 && at + 12 <= text.length) {
        const status = text.slice(at + 9, at + 12);
        statuses[status] = (statuses[status] ?? 0) + 1;
        conn.outstanding--;
        end = at + 12;
        at = text.indexOf("HTTP/1.1 ", end);
      }
      conn.carry = text.slice(Math.max(end, text.length - 11));
    });
  });
}

const conns = await Promise.all(Array.from({ length: CONNECTIONS }, connect));
const started = Date.now();
let due = 0;
const timer = setInterval(() => {
  // Requests owed since the start, so a late tick catches up.
  const owed = Math.floor(((Date.now() - started) * rate) / 1000) - due;
  due += owed;
  const tokens = same ? undefined : randomBytes(24 * owed).toString("base64url");
  const batches: string[][] = conns.map(() => []);
  for (let i = 0; i < owed; i++) {
    const c = i % CONNECTIONS;
    if (conns[c]!.outstanding + batches[c]!.length >= MAX_OUTSTANDING) {
      skipped++;
      continue;
    }
    batches[c]!.push(head + (tokens === undefined ? fixed : tokens.slice(i * 32, i * 32 + 32)) + tail);
  }
  conns.forEach((conn, c) => {
    const batch = batches[c]!;
    if (batch.length === 0) return;
    conn.outstanding += batch.length;
    sent += batch.length;
    conn.socket.write(batch.join(""), "latin1");
  });
}, TICK_MS);

process.stdout.write("flooding\n");
process.once("SIGTERM", () => {
  clearInterval(timer);
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write(`${JSON.stringify({ sent, skipped, seconds, statuses })}\n`);
  process.exit(0);
});
