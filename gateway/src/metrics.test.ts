import { createServer } from "node:net";
import type { Logger } from "@latchkey/runtime";
import { afterAll, describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing/in-memory-gateway.ts";
import { listenMetrics, metricsPortOf, serveMetrics } from "./metrics-server.ts";

/** A port something else holds until `close()`. */
async function taken(): Promise<{ port: number; close(): void }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return { port, close: () => server.close() };
}

function recordingLog() {
  const warnings: string[] = [];
  const log = { warn: (_: unknown, msg: string) => warnings.push(msg), info: () => {} } as unknown as Logger;
  return { log, warnings };
}

describe("/metrics", () => {
  const servers: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it("is not served on the public port: GET /metrics answers 404 in the error shape", async () => {
    const h = harness();
    const res = await h.get("/metrics");
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "No operation is served at '/metrics'.",
      status: 404,
      type: `${DOCS}unkey/resource/not_found`,
    });
  });

  it("is served on a port of its own, counting public requests by operation and status", async () => {
    const h = harness({ keys: { createApi: () => ({ apiId: "api_metered" }) } });
    const key = h.rootKey("api.*.create_api");
    expect((await h.post("apis.createApi", { name: "metered" }, { key })).status).toBe(200);
    expect((await h.post("apis.createApi", { name: "x" }, { key })).status).toBe(400);
    const server = await listenMetrics(0, "127.0.0.1");
    servers.push(server);
    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(
      /latchkey_http_request_duration_seconds_count\{operation="apis.createApi",status="200"\} [1-9]/,
    );
    expect(text).toMatch(
      /latchkey_http_request_duration_seconds_count\{operation="apis.createApi",status="400"\} [1-9]/,
    );
    expect(text).toContain("process_cpu_seconds_total");
  });

  it("answers nothing else on the metrics port: 404 for another path, 405 for another method", async () => {
    const server = await listenMetrics(0, "127.0.0.1");
    servers.push(server);
    const base = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${base}/v2/keys.verifyKey`, { method: "POST", body: "{}" })).status).toBe(404);
    expect((await fetch(`${base}/healthz`)).status).toBe(404);
    const post = await fetch(`${base}/metrics`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${base}/metrics`, { method: "HEAD" })).status).toBe(200);
  });

  it.each([
    ["9464", 9464],
    ["1", 1],
    ["65535", 65535],
    ["0", undefined],
    ["off", undefined],
  ])("reads METRICS_PORT=%s as %s", (text, port) => {
    expect(metricsPortOf(text)).toBe(port);
  });

  it.each(["", "on", "-1", "65536", "9464.5", "0x10"])("refuses METRICS_PORT=%s, naming it", (text) => {
    expect(() => metricsPortOf(text)).toThrow(
      `METRICS_PORT must be a port (1 to 65535), or 0 or off to serve no metrics; got '${text}'`,
    );
  });

  it("serves nothing for METRICS_PORT=off", async () => {
    const { log } = recordingLog();
    expect(await serveMetrics({ value: "off", chosen: true }, "127.0.0.1", log)).toBeUndefined();
  });

  it("stops the start when a METRICS_PORT that was set is taken", async () => {
    const other = await taken();
    try {
      const { log } = recordingLog();
      await expect(
        serveMetrics({ value: String(other.port), chosen: true }, "127.0.0.1", log),
      ).rejects.toThrow(/EADDRINUSE/);
    } finally {
      other.close();
    }
  });

  it("warns and serves no metrics when the default port is taken (another Latchkey on this host)", async () => {
    const other = await taken();
    try {
      const { log, warnings } = recordingLog();
      expect(
        await serveMetrics({ value: String(other.port), chosen: false }, "127.0.0.1", log),
      ).toBeUndefined();
      expect(warnings).toEqual([
        `metrics are not served: 127.0.0.1:${other.port} is in use; set METRICS_PORT to another port, or to off`,
      ]);
    } finally {
      other.close();
    }
  });
});
