import { spawn } from "node:child_process";
import { join } from "node:path";
import { freePort, type Proc } from "../test/harness.ts";

const root = join(import.meta.dirname, "..");
const tsx = join(root, "node_modules/.bin/tsx");

/**
 * Like the harness's startProcess, on a port chosen before the start: each
 * ratelimit replica must be told every replica's URL (RATELIMIT_PEERS), its own
 * included, and startProcess picks the port only as it spawns.
 */
async function startOnPort(
  name: string,
  entry: string,
  port: number,
  env: Record<string, string>,
): Promise<Proc> {
  let output = "";
  const child = spawn(tsx, [join(root, entry)], {
    env: { ...process.env, LOG_LEVEL: "warn", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (d) => {
    output += d;
  });
  child.stderr.on("data", (d) => {
    output += d;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`${name} did not become healthy:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name,
    url,
    child,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
      }),
  };
}

/**
 * `count` ratelimit replicas sharing one budget (RATELIMIT_PEERS, RATELIMIT_SELF)
 * on one PostgreSQL and one NATS, as services/ratelimit/README.md describes.
 */
export async function startRatelimitReplicas(
  databaseUrl: string,
  natsUrl: string,
  count: number,
): Promise<Proc[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const started: Proc[] = [];
  try {
    // One at a time: each runs the migrations at start, under an advisory lock.
    for (const [i, port] of ports.entries()) {
      started.push(
        await startOnPort(`ratelimit-replica-${i}`, "services/ratelimit/src/main.ts", port, {
          DATABASE_URL: databaseUrl,
          NATS_URL: natsUrl,
          RATELIMIT_PEERS: urls.join(","),
          RATELIMIT_SELF: urls[i]!,
        }),
      );
    }
  } catch (err) {
    await Promise.all(started.map((p) => p.stop()));
    throw err;
  }
  return started;
}
