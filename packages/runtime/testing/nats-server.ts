import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.ts";

/**
 * A nats-server with JetStream of a test's own, on a port of its own, which the test may kill and start
 * again (the shared one is never stopped); `close` kills it and removes its store. `started: false`
 * leaves it to the test to start, for a process that must find NATS away at first. `args` go to
 * nats-server as they are (e.g. a config file, `-c`).
 */
export async function ownNatsServer(options: { started?: boolean; args?: string[] } = {}) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "latchkey-nats-"));
  let server: ChildProcess | undefined;
  let log = "";
  const listening = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
  const start = async () => {
    server = spawn(
      "nats-server",
      ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir, ...(options.args ?? [])],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    // Its log (on stderr), for tests that look for what it saw (a slow consumer, say); the last MiB.
    server.stderr?.on("data", (d) => {
      log = `${log}${d}`.slice(-1_048_576);
    });
    const until = Date.now() + 10_000;
    while (!(await listening())) {
      if (Date.now() > until) throw new Error(`nats-server did not listen on ${port} within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  /** Kills it (SIGKILL: as abrupt as a crash) and waits for it to exit. */
  const stop = async () => {
    const s = server;
    if (!s || s.exitCode !== null) return;
    const exited = new Promise((r) => s.once("exit", r));
    s.kill("SIGKILL");
    await exited;
  };
  if (options.started !== false) await start();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    start,
    stop,
    /** What the server has logged since the test started it. */
    log: () => log,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
