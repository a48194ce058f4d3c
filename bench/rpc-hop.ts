import { execFileSync } from "node:child_process";
import net from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { GetApiRequestSchema, GetApiResponseSchema, KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { InternalAuth, internalTransport, serveRpc } from "@latchkey/runtime";

/**
 * One hop between Latchkey's processes, alone: a served method (KeysService.GetApi, a caller in
 * the request and a small answer) called through internalTransport over loopback, signed and with
 * a deadline as main.ts sets them, CONCURRENCY (8) calls out at a time, ROUNDS (5) rounds of CALLS
 * (20,000). Prints calls a second, the CPU per call of this process (client and server both), and
 * how many TCP connections the server held, so a transport that reconnects shows. Whatever
 * serveRpc and internalTransport are in this checkout is what it measures: run it in two checkouts
 * to compare them (`npx tsx bench/rpc-hop.ts`).
 *
 * Each round is followed by one of the floor: the same exchange's bytes (an HTTP/1.1 request of
 * the call's size, its answer of the answer's size) between bare sockets of this process, read by
 * their Content-Length and nothing else: no HTTP objects, no signature, no protobuf. What a hop
 * costs above the floor is what an internal server and client lighter than node:http could save.
 */
const CALLS = Number(process.env["CALLS"] ?? 20_000);
const ROUNDS = Number(process.env["ROUNDS"] ?? 5);
const CONCURRENCY = Number(process.env["CONCURRENCY"] ?? 8);

const auth = new InternalAuth(["rpc-hop-bench-secret-rpc-hop-bench-secret"]);
const caller = { workspaceId: "ws_bench", rootKeyId: "rk_bench", permissions: ["api.*.read_api"] };

const served = await serveRpc(
  (router) =>
    router.service(KeysService, {
      getApi: (req) => ({
        api: { id: req.apiId, name: "bench", workspaceId: req.caller?.workspaceId ?? "" },
      }),
    }),
  0,
  undefined,
  "127.0.0.1",
  { auth },
);
const client = createClient(
  KeysService,
  internalTransport(`http://127.0.0.1:${served.port}`, { auth, timeoutMs: 5_000 }),
);

/** Established loopback connections to the server's port, seen from the server's side. */
function connections(): number {
  const out = execFileSync("ss", ["-Htn", "state", "established", `( sport = :${served.port} )`]).toString();
  return out.split("\n").filter(Boolean).length;
}

async function round(calls: number): Promise<{ perSecond: number; cpuUs: number }> {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < calls) {
        next++;
        await client.getApi({ caller, apiId: "api_bench" });
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { perSecond: calls / seconds, cpuUs: (used.user + used.system) / calls };
}

/** The floor's server: answers each request, found by its Content-Length, with `answer`. */
function bareServer(answer: Buffer): Promise<net.Server> {
  const server = net.createServer({ noDelay: true }, (socket) => {
    let pending: Buffer = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      for (
        let size = exchangeSize(pending);
        size > 0 && pending.length >= size;
        size = exchangeSize(pending)
      ) {
        pending = pending.subarray(size);
        socket.write(answer);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** The bytes of the first whole message in `data` (head and body), or 0 while it is not all there. */
function exchangeSize(data: Buffer): number {
  const end = data.indexOf("\r\n\r\n");
  if (end < 0) return 0;
  const at = data.indexOf("content-length: ");
  const length = Number(data.toString("latin1", at + 16, data.indexOf("\r", at)));
  return end + 4 + length;
}

/** An HTTP/1.1 message of a call's shape, its body `body`. */
function message(head: string, body: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${head}content-length: ${body.length}\r\n\r\n`), body]);
}

const request = message(
  `POST /keys.v1.KeysService/GetApi HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/proto\r\nconnect-protocol-version: 1\r\nconnect-timeout-ms: 5000\r\nx-latchkey-internal: ${"a".repeat(120)}\r\n`,
  toBinary(GetApiRequestSchema, create(GetApiRequestSchema, { caller, apiId: "api_bench" })),
);
const response = message(
  "HTTP/1.1 200 OK\r\ncontent-type: application/proto\r\ndate: Sat, 28 Nov 2026 00:00:00 GMT\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\n",
  toBinary(GetApiResponseSchema, create(GetApiResponseSchema, { api: { id: "api_bench", name: "bench" } })),
);
const floor = await bareServer(response);
const floorPort = (floor.address() as net.AddressInfo).port;

async function floorRound(calls: number): Promise<{ perSecond: number; cpuUs: number }> {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from(
      { length: CONCURRENCY },
      () =>
        new Promise<void>((resolve) => {
          const socket = net.connect({ port: floorPort, host: "127.0.0.1", noDelay: true });
          let pending: Buffer = Buffer.alloc(0);
          const send = () => {
            if (next >= calls) return void socket.end(resolve);
            next++;
            socket.write(request);
          };
          socket.on("connect", send);
          socket.on("data", (chunk: Buffer) => {
            pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
            const size = exchangeSize(pending);
            if (size > 0 && pending.length >= size) {
              pending = pending.subarray(size);
              send();
            }
          });
        }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { perSecond: calls / seconds, cpuUs: (used.user + used.system) / calls };
}

await round(2_000);
await floorRound(2_000);
for (let i = 0; i < ROUNDS; i++) {
  const { perSecond, cpuUs } = await round(CALLS);
  process.stdout.write(
    `round ${i + 1}: ${Math.round(perSecond)} calls/s, ${cpuUs.toFixed(1)} µs CPU per call, ${connections()} connections\n`,
  );
  const bare = await floorRound(CALLS);
  process.stdout.write(
    `  floor: ${Math.round(bare.perSecond)} calls/s, ${bare.cpuUs.toFixed(1)} µs CPU per call (the same bytes between bare sockets)\n`,
  );
}
await served.close();
floor.close();
process.exit(0);
