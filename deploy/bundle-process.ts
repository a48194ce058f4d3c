import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { repoRoot } from "./bundle.ts";

// Starting a bundle the way the image starts it (the Dockerfile's ENTRYPOINT,
// then the workload's args), for the bundle tests.

/** The Dockerfile's ENTRYPOINT, e.g. ["node", "--enable-source-maps"]. */
export function entrypoint(): string[] {
  const dockerfile = readFileSync(join(repoRoot, "deploy", "Dockerfile"), "utf8");
  const line = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile);
  if (!line) throw new Error("deploy/Dockerfile has no ENTRYPOINT in exec form");
  return JSON.parse(line[1]!) as string[];
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  stdout: string;
}

export interface Started {
  child: ChildProcess;
  exited: Promise<Exit>;
  /** What it has written to stdout so far (its JSON log lines). */
  stdout(): string;
}

const running = new Set<ChildProcess>();

/** Starts <outdir>/<name>.mjs with only `env` (and PATH) as its environment, from outdir. */
export function startBundle(outdir: string, name: string, env: Record<string, string>): Started {
  const [node, ...flags] = entrypoint();
  if (node !== "node") throw new Error(`the image's ENTRYPOINT runs ${node}, not node`);
  const child = spawn(process.execPath, [...flags, join(outdir, `${name}.mjs`)], {
    cwd: outdir,
    env: { PATH: process.env["PATH"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (b) => {
    stdout += b;
  });
  child.stderr?.on("data", (b) => {
    stderr += b;
  });
  const exited = new Promise<Exit>((resolve) =>
    child.on("exit", (code, signal) => {
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { child, exited, stdout: () => stdout };
}

/** Kills every bundle still running (a test that failed half-way leaves none behind). */
export function killBundles(): void {
  for (const child of running) child.kill("SIGKILL");
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** GETs `url` until it answers 200, or throws with the last answer once `deadline` (ms since epoch) passes. */
export async function waitForOk(url: string, deadline: number, exited?: Promise<Exit>): Promise<Response> {
  let gone: Exit | undefined;
  void exited?.then((exit) => {
    gone = exit;
  });
  let last = "no answer";
  for (;;) {
    if (gone)
      throw new Error(`the process exited (${gone.code}) before ${url} answered 200:\n${gone.stderr}`);
    try {
      const res = await fetch(url);
      if (res.ok) return res;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = String(err);
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 in time: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
