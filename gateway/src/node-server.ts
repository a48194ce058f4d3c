import http from "node:http";
import type { Socket } from "node:net";
import { listening } from "@latchkey/runtime";
import type { EdgeServer } from "./edge.ts";
import type { Gateway } from "./gateway.ts";
import { checkIntervalMs, HTTP_LIMITS, type HttpLimits } from "./http-limits.ts";

/**
 * The gateway served through node:http (HTTP_SERVER=node), held to the same limits as the edge
 * where node:http has the knob: head size, headers and request timeouts, keep-alive, connection
 * cap. It has none for a minimum body rate; requestTimeoutMs bounds a slow body there.
 */
export async function listenNode(
  gateway: Gateway,
  port: number,
  host: string,
  options: Partial<HttpLimits> = {},
  /** For tests: changes to the server before it listens. */
  configure?: (server: http.Server) => void,
): Promise<EdgeServer> {
  const limits = { ...HTTP_LIMITS, ...options };
  const server = http.createServer(
    {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // node:http checks its timeouts every 30 s unless told otherwise: too coarse for a 10 s deadline.
      connectionsCheckingInterval: checkIntervalMs(limits),
    },
    gateway.handle,
  );
  // Over the cap node:http closes a new connection as it is accepted, unread.
  server.maxConnections = limits.maxConnections;
  // The peer's address, read once per connection while it is open (node:net keeps it from then
  // on), so a request whose client has gone by the time its body is read still has its client.
  server.on("connection", (socket: Socket) => socket.remoteAddress);
  configure?.(server);
  return {
    port: await listening(server, port, host),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }).then(() => gateway.close()),
  };
}
