import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.ts";

/**
 * A nats-server with JetStream of a test's own, on a port of its own, which the test may kill and start
 * again (the shared one is never stopped); `close` kills it and removes its store.
 */
export async function ownNatsServer() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "latchkey-nats-"));
  let server: ChildProcess | undefined;
  const listening = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
  const start = async () => {
    server = spawn("nats-server", ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir], {
      stdio: "ignore",
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
  await start();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    start,
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
