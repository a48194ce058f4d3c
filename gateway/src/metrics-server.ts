import http from "node:http";
import { type Logger, listening, metricsText } from "@latchkey/runtime";

/**
 * Prometheus metrics on a port of their own (METRICS_PORT), never on the public port: they name
 * operations, statuses and process internals that are nobody's business outside. Only GET and
 * HEAD /metrics are answered here.
 */
export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/** The port the gateway's metrics are served on unless METRICS_PORT says otherwise. */
export const DEFAULT_METRICS_PORT = 9464;

/** METRICS_PORT as a port, or undefined for 0 or off (no metrics served); anything else throws. */
export function metricsPortOf(text: string): number | undefined {
  if (text === "off" || text === "0") return undefined;
  const port = /^[0-9]{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65_535)) {
    throw new Error(
      `METRICS_PORT must be a port (1 to 65535), or 0 or off to serve no metrics; got '${text}'`,
    );
  }
  return port;
}

/** Serves /metrics on `port` of `host` (0 picks a free port). */
export async function listenMetrics(port: number, host: string): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { "content-type": "text/plain", allow: "GET, HEAD" }).end("GET or HEAD only\n");
      return;
    }
    metricsText().then(
      ({ contentType, body }) => res.writeHead(200, { "content-type": contentType }).end(body),
      () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics could not be collected\n"),
    );
  });
  return {
    port: await listening(server, port, host),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * METRICS_PORT applied at start: `value` is its text (the default when unset), `chosen` whether it
 * was set. A port that was set and is taken stops the start; the default port, taken by another
 * Latchkey on the same host, is warned about and no metrics are served.
 */
export async function serveMetrics(
  setting: { value: string; chosen: boolean },
  host: string,
  log: Logger,
): Promise<MetricsServer | undefined> {
  const port = metricsPortOf(setting.value);
  if (port === undefined) return undefined;
  try {
    return await listenMetrics(port, host);
  } catch (err) {
    if (setting.chosen || (err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
    log.warn(
      { host, port },
      `metrics are not served: ${host}:${port} is in use; set METRICS_PORT to another port, or to off`,
    );
    return undefined;
  }
}
