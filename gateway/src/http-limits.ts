import { env } from "@latchkey/runtime";

/**
 * What the gateway's HTTP server (edge.ts, or node:http with HTTP_SERVER=node) holds every client
 * to, so that idle, slow or greedy clients cannot pin memory or connections. gateway/README.md
 * lists them with their settings; the largest body (1 MiB) is the gateway's own (maxBodyBytes).
 */
export interface HttpLimits {
  /** Largest request head (request line and header fields as received, or trailer fields); more answers 431. */
  maxHeaderBytes: number;
  /** From a request's first byte (or the connection's start) to the end of its head; later answers 408. */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body; later answers 408. */
  requestTimeoutMs: number;
  /** How long a connection may wait idle for its next request before it is closed. */
  keepAliveTimeoutMs: number;
  /**
   * Bytes per second a body must average, counted from the end of its head after a grace of
   * headersTimeoutMs; a slower body answers 408. node:http has no such knob.
   */
  minBodyRate: number;
  /** Connections open at once; one more is closed as it arrives, before anything is read from it. */
  maxConnections: number;
}

export const HTTP_LIMITS: HttpLimits = {
  maxHeaderBytes: 16 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // Longer than the 60 s idle timeout of common load balancers, so that they close first and never
  // send a request on a connection the gateway is closing.
  keepAliveTimeoutMs: 65_000,
  minBodyRate: 1024,
  maxConnections: 4096,
};

/** The limits, each overridable by its environment variable. */
export function httpLimits(): HttpLimits {
  return {
    maxHeaderBytes: HTTP_LIMITS.maxHeaderBytes,
    headersTimeoutMs: env.int("HTTP_HEADERS_TIMEOUT_MS", 10_000, 1),
    requestTimeoutMs: env.int("HTTP_REQUEST_TIMEOUT_MS", 30_000, 1),
    keepAliveTimeoutMs: env.int("HTTP_KEEP_ALIVE_TIMEOUT_MS", 65_000, 1),
    minBodyRate: env.int("HTTP_MIN_BODY_RATE", 1024, 0),
    maxConnections: env.int("HTTP_MAX_CONNECTIONS", 4096, 1),
  };
}

/**
 * How often the timeouts are checked: once a second, or four times within the shortest one, so a
 * deadline is kept to within a quarter of it (tests configure timeouts of a few hundred ms).
 */
export function checkIntervalMs(limits: HttpLimits): number {
  const shortest = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs, limits.keepAliveTimeoutMs);
  return Math.max(10, Math.min(1_000, Math.floor(shortest / 4)));
}
