import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bundle, repoRoot } from "./bundle.ts";
import { components } from "./components.ts";
import { type EnvReads, envReads } from "./env-reads.ts";

// What `pnpm build` makes for the image, started the way the image starts it
// (the Dockerfile's ENTRYPOINT, then the Deployment's args). The bundles are
// written outside the repository, so a bundle that still needed node_modules
// would fail here as it would in the image.

const outdir = mkdtempSync(join(tmpdir(), "latchkey-bundles-"));
const written = components.filter((c) => existsSync(join(repoRoot, c.entry)));
const reads = new Map<string, EnvReads>();

/** The Dockerfile's ENTRYPOINT, e.g. ["node", "--enable-source-maps"]. */
function entrypoint(): string[] {
  const dockerfile = readFileSync(join(repoRoot, "deploy", "Dockerfile"), "utf8");
  const line = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile);
  if (!line) throw new Error("deploy/Dockerfile has no ENTRYPOINT in exec form");
  return JSON.parse(line[1]!) as string[];
}

/** Addresses where nothing listens, for the servers a component requires. */
const unreachable: Record<string, string> = {
  DATABASE_URL: "postgres://latchkey@127.0.0.1:1/latchkey",
  CLICKHOUSE_URL: "http://127.0.0.1:1/latchkey",
  NATS_URL: "nats://127.0.0.1:1",
};

interface Exit {
  code: number | null;
  stderr: string;
  stdout: string;
}

const running = new Set<ChildProcess>();

/** Starts dist/<name>.mjs with only `env` (and PATH) as its environment. */
function start(name: string, env: Record<string, string>) {
  const [node, ...flags] = entrypoint();
  expect(node).toBe("node");
  const child = spawn(process.execPath, [...flags, join(outdir, `${name}.mjs`)], {
    cwd: outdir,
    env: { PATH: process.env["PATH"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b) => {
    stdout += b;
  });
  child.stderr.on("data", (b) => {
    stderr += b;
  });
  const exited = new Promise<Exit>((resolve) =>
    child.on("exit", (code) => {
      running.delete(child);
      resolve({ code, stdout, stderr });
    }),
  );
  return { child, exited };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitForOk(url: string, deadline: number): Promise<Response> {
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return res;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// At collection time: which tests apply depends on what each bundle reads.
for (const c of written) reads.set(c.name, envReads(repoRoot, (await bundle(c, outdir)).sources));

afterAll(() => {
  for (const child of running) child.kill("SIGKILL");
  rmSync(outdir, { recursive: true, force: true });
});

describe.each(components.map((c) => [c.name, c] as const))("dist/%s.mjs", (name, component) => {
  const built = written.includes(component);

  it.skipIf(!built)("is one self-contained file with its source map", () => {
    expect(existsSync(join(outdir, `${name}.mjs`))).toBe(true);
    expect(existsSync(join(outdir, `${name}.mjs.map`))).toBe(true);
    expect(reads.get(name)!.read.has("PORT")).toBe(true);
  });

  const required = [...(reads.get(name)?.required ?? [])];

  it.skipIf(!built || required.length === 0)(
    "refuses to start without a variable it requires, naming it",
    async () => {
      const exit = await start(name, {}).exited;
      expect(exit.code).toBe(1);
      expect(exit.stderr).toMatch(new RegExp(`(${required.join("|")}) is required`));
    },
    30_000,
  );

  it.skipIf(!built || required.length > 0)(
    "starts with nothing configured, answers /healthz and exits 0 on SIGTERM",
    async () => {
      const port = await freePort();
      const { child, exited } = start(name, { PORT: String(port), LOG_LEVEL: "warn" });
      const res = await waitForOk(`http://127.0.0.1:${port}/healthz`, Date.now() + 15_000);
      expect(await res.json()).toEqual({ status: "ok" });
      child.kill("SIGTERM");
      expect((await exited).code).toBe(0);
    },
    30_000,
  );

  const servers = required.filter((v) => v in unreachable);

  it.skipIf(!built || servers.length === 0)(
    `exits with the connection error when its servers cannot be reached, rather than hang`,
    async () => {
      const env: Record<string, string> = {};
      for (const v of required) env[v] = unreachable[v] ?? "unused";
      const exit = await start(name, env).exited;
      expect(exit.code).toBe(1);
      expect(exit.stderr).toContain("ECONNREFUSED");
    },
    30_000,
  );
});
