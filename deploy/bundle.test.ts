import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildConsole } from "../console/server/build.ts";
import { bundle, repoRoot } from "./bundle.ts";
import { freePort, killBundles, startBundle, waitForOk } from "./bundle-process.ts";
import { components } from "./components.ts";
import { type EnvReads, envReads } from "./env-reads.ts";

// What `npm run build` makes for the image, started the way the image starts it
// (the Dockerfile's ENTRYPOINT, then the Deployment's args). The bundles are
// written outside the repository, so a bundle that still needed node_modules
// would fail here as it would in the image.

const outdir = mkdtempSync(join(tmpdir(), "latchkey-bundles-"));
const written = components.filter((c) => existsSync(join(repoRoot, c.entry)));
const reads = new Map<string, EnvReads>();
const sources = new Map<string, string[]>();

/** Addresses where nothing listens, for the servers a component requires. */
const unreachable: Record<string, string> = {
  DATABASE_URL: "postgres://latchkey@127.0.0.1:1/latchkey",
  CLICKHOUSE_URL: "http://127.0.0.1:1/latchkey",
  NATS_URL: "nats://127.0.0.1:1",
};

/** Required values that need no server: what a component may start with and nothing else. */
const given: Record<string, string> = {
  LATCHKEY_INTERNAL_SECRET: "bundle-test-internal-secret-0123456789",
  LATCHKEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64"),
};

// At collection time: which tests apply depends on what each bundle reads.
for (const c of written) {
  const built = await bundle(c, outdir);
  sources.set(c.name, built.sources);
  reads.set(c.name, envReads(repoRoot, built.sources));
}

afterAll(() => {
  killBundles();
  rmSync(outdir, { recursive: true, force: true });
});

describe.each(components.map((c) => [c.name, c] as const))("dist/%s.mjs", (name, component) => {
  const built = written.includes(component);

  it.skipIf(!built)("is one self-contained file with its source map", () => {
    expect(existsSync(join(outdir, `${name}.mjs`))).toBe(true);
    expect(existsSync(join(outdir, `${name}.mjs.map`))).toBe(true);
    expect(reads.get(name)!.read.has("PORT")).toBe(true);
  });

  // Test support (CONTRIBUTING.md: a package's testing/ folder) starts servers and wires services in process: the
  // layer rules keep production code from importing it, and this checks what the image would actually run.
  it.skipIf(!built)(
    "holds its own entry and no test support: nothing from a testing/ folder, no test file",
    () => {
      const inputs = sources.get(name)!;
      expect(inputs).toContain(component.entry);
      expect(inputs.filter((path) => /(^|\/)testing\/|\.test\.ts$|^test\//.test(path))).toEqual([]);
    },
  );

  const required = [...(reads.get(name)?.required ?? [])];

  it.skipIf(!built || required.length === 0)(
    "refuses to start without a variable it requires, naming it",
    async () => {
      const exit = await startBundle(outdir, name, {}).exited;
      expect(exit.code).toBe(1);
      expect(exit.stderr).toMatch(new RegExp(`(${required.join("|")}) is required`));
    },
    30_000,
  );

  const servers = required.filter((v) => v in unreachable);

  it.skipIf(!built || servers.length > 0)(
    "starts with nothing but its secrets configured, answers /healthz on its port and /metrics on its metrics port and exits 0 on SIGTERM",
    async () => {
      const port = await freePort();
      // The gateway serves /metrics on a port of its own and answers it 404 on the public one.
      const metricsPort = component.metricsPort === undefined ? port : await freePort();
      const env: Record<string, string> = { PORT: String(port), LOG_LEVEL: "warn" };
      if (component.metricsPort !== undefined) env["METRICS_PORT"] = String(metricsPort);
      for (const v of required) env[v] = given[v] ?? "unused";
      const { child, exited } = startBundle(outdir, name, env);
      const res = await waitForOk(`http://127.0.0.1:${port}/healthz`, Date.now() + 15_000, exited);
      expect(await res.json()).toEqual({ status: "ok" });
      if (metricsPort !== port) expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
      const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
      expect(await metrics.text()).toMatch(/^# HELP process_/m);
      child.kill("SIGTERM");
      expect((await exited).code).toBe(0);
    },
    30_000,
  );

  it.skipIf(!built || servers.length === 0)(
    "waits for servers it cannot reach: alive, not ready and answering 503 meanwhile, a log line per try, and exits 0 on SIGTERM",
    async () => {
      const port = await freePort();
      const env: Record<string, string> = { PORT: String(port) };
      for (const v of required) env[v] = unreachable[v] ?? given[v] ?? "unused";
      const { child, exited, stdout } = startBundle(outdir, name, env);
      // Alive, so Kubernetes' liveness and startup probes leave it be while a dependency is away.
      const alive = await waitForOk(`http://127.0.0.1:${port}/healthz`, Date.now() + 15_000, exited);
      expect(await alive.json()).toEqual({ status: "starting", waitingFor: expect.any(String) });
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: "starting", waitingFor: expect.any(String) });
      const call = await fetch(`http://127.0.0.1:${port}/any.v1.Service/Method`, {
        method: "POST",
        headers: { "content-type": "application/proto" },
        body: new Uint8Array(),
      });
      expect(call.status).toBe(503);
      expect(await call.json()).toEqual({
        code: "unavailable",
        message: expect.stringContaining("starting"),
      });
      // Two tries at least (the second after 200 to 250 ms): each says what it waits for and why.
      const deadline = Date.now() + 15_000;
      const tries = () => [...stdout().matchAll(/"msg":"[^"]+ is not available yet; trying again"/g)];
      while (tries().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(tries().length).toBeGreaterThanOrEqual(2);
      expect(stdout()).toMatch(/ECONNREFUSED|connection refused/);
      child.kill("SIGTERM");
      expect((await exited).code).toBe(0);
    },
    30_000,
  );
});

describe("the console in the image", () => {
  it("is served by dist/gateway.mjs from dist/console beside it, as npm run build lays it out", async () => {
    await buildConsole(join(outdir, "console"));
    const port = await freePort();
    const { child, exited } = startBundle(outdir, "gateway", {
      PORT: String(port),
      METRICS_PORT: "0",
      LOG_LEVEL: "warn",
      ...given,
    });
    await waitForOk(`http://127.0.0.1:${port}/healthz`, Date.now() + 15_000, exited);
    const index = await fetch(`http://127.0.0.1:${port}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.headers.get("content-security-policy")).toMatch(/^default-src 'self';/);
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(await index.text())![1]!;
    const asset = await fetch(`http://127.0.0.1:${port}${script}`);
    expect([asset.status, asset.headers.get("cache-control")]).toEqual([
      200,
      "public, max-age=31536000, immutable",
    ]);
    // The portal web app, built with it into dist/console/portal, at /portal/.
    const portal = await fetch(`http://127.0.0.1:${port}/portal/?code=x`);
    expect([portal.status, portal.headers.get("cache-control")]).toEqual([200, "no-cache"]);
    expect(portal.headers.get("content-security-policy")).toContain("img-src 'self' data: https:;");
    const portalScript = /src="\.\/(assets\/[^"]+\.js)"/.exec(await portal.text())![1]!;
    expect((await fetch(`http://127.0.0.1:${port}/portal/${portalScript}`)).status).toBe(200);
    child.kill("SIGTERM");
    expect((await exited).code).toBe(0);
  }, 60_000);
});
