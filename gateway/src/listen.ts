import { env } from "@latchkey/runtime";
import { listenEdge } from "./edge.ts";
import type { Gateway } from "./gateway.ts";
import { httpLimits } from "./http-limits.ts";
import { listenNode } from "./node-server.ts";

// The HTTP servers depend on the gateway and not the other way round: gateway.ts handles a request whichever
// server read it, and this module picks the server.

/**
 * Serves a gateway on a port (0 picks a free one); for main.ts, the all-in-one process and tests.
 * HTTP_SERVER picks the HTTP server: `edge` (default, edge.ts) or `node` (node:http), which
 * answer the same; edge is the faster (docs/architecture.md).
 */
export async function listen(
  gateway: Gateway,
  port: number,
  host = "0.0.0.0",
): Promise<{ port: number; close(): Promise<void> }> {
  const kind = env.string("HTTP_SERVER", "edge");
  if (kind !== "edge" && kind !== "node") throw new Error(`HTTP_SERVER must be edge or node, got '${kind}'`);
  // Timeouts and the connection cap, the same for both (http-limits.ts).
  const limits = httpLimits();
  return kind === "edge" ? listenEdge(gateway, port, host, limits) : listenNode(gateway, port, host, limits);
}
