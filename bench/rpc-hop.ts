import { execFileSync } from "node:child_process";
import { createClient } from "@connectrpc/connect";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { InternalAuth, internalTransport, serveRpc } from "@latchkey/runtime";

/**
 * One hop between Latchkey's processes, alone: a served method (KeysService.GetApi, a caller in
 * the request and a small answer) called through internalTransport over loopback, signed and with
 * a deadline as main.ts sets them, CONCURRENCY (8) calls out at a time, ROUNDS (5) rounds of CALLS
 * (20,000). Prints calls a second, the CPU per call of this process (client and server both), and
 * how many TCP connections the server held, so a transport that reconnects shows. Whatever
 * serveRpc and internalTransport are in this checkout is what it measures: run it in two checkouts
 * to compare them (`npx tsx bench/rpc-hop.ts`).
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

await round(2_000);
for (let i = 0; i < ROUNDS; i++) {
  const { perSecond, cpuUs } = await round(CALLS);
  process.stdout.write(
    `round ${i + 1}: ${Math.round(perSecond)} calls/s, ${cpuUs.toFixed(1)} µs CPU per call, ${connections()} connections\n`,
  );
}
await served.close();
process.exit(0);
