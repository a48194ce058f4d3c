import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

/** The gateway as its own process (main.ts), as deploy runs it; services are never reached here. */
const main = join(import.meta.dirname, "main.ts");
const started: ChildProcess[] = [];
/** As a Kubernetes Secret would give it: the gateway does not start without one. */
const SECRET = "test-internal-secret-of-32-chars!";

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ["--import", "tsx", main], {
    env: { ...process.env, LOG_LEVEL: "warn", NATS_URL: "", LATCHKEY_INTERNAL_SECRET: SECRET, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let stderr = "";
  child.stderr!.on("data", (d) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, stderr })),
  );
  return { child, exited };
}

async function waitFor(url: string, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + 30_000;
  while (!gone && Date.now() < deadline) {
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer`);
}

afterEach(() => {
  for (const child of started.splice(0)) child.kill("SIGKILL");
});

describe("gateway/src/main.ts", () => {
  it("serves /metrics on METRICS_PORT only: the public port answers 404 for it", async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const { child, exited } = start({ PORT: String(port), METRICS_PORT: String(metricsPort) });
    await waitFor(`http://127.0.0.1:${port}/healthz`, exited);
    await waitFor(`http://127.0.0.1:${metricsPort}/metrics`, exited);

    const unauthenticated = await fetch(`http://127.0.0.1:${port}/v2/apis.createApi`, {
      method: "POST",
      body: '{"name":"payments"}',
    });
    expect(unauthenticated.status).toBe(401);
    const publicMetrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(publicMetrics.status).toBe(404);
    expect(((await publicMetrics.json()) as { error: { status: number } }).error.status).toBe(404);

    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/^# HELP process_cpu_seconds_total/m);
    expect(text).toMatch(
      /latchkey_http_request_duration_seconds_count\{operation="apis.createApi",status="401"\} 1/,
    );
    child.kill("SIGTERM");
    expect((await exited).code).toBe(0);
  }, 60_000);

  it("refuses to start with ROOT_KEY_CACHE_TTL_MS over 60000, naming it", async () => {
    const { exited } = start({
      PORT: String(await freePort()),
      METRICS_PORT: "off",
      ROOT_KEY_CACHE_TTL_MS: "60001",
    });
    const exit = await exited;
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain(
      "ROOT_KEY_CACHE_TTL_MS must be 0 to 60000 ms: a revoked root key keeps working until its cache entry expires; got 60001",
    );
  }, 60_000);
});
