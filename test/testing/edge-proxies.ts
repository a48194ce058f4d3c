import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@latchkey/runtime/testing/free-port";

const root = join(import.meta.dirname, "..", "..");

/** A request the upstream received. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/** A real upstream: a node:http server that records every request and answers 200 "upstream". */
export async function recordingUpstream(): Promise<{
  port: number;
  received: Received[];
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("upstream");
    });
  });
  server.keepAliveTimeout = 65_000;
  const port = await new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
  );
  return {
    port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface EdgeProxy {
  name: "nginx" | "caddy";
  url: string;
  output(): string;
  stop(): Promise<void>;
}

export interface ProxyOptions {
  /** The gateway, host:port. */
  latchkey: string;
  rootKey: string;
  /** The upstream, host:port. */
  upstream: string;
}

/** ${NAME} placeholders filled in, as envsubst does with the names it is given. */
function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\$\{([A-Z_]+)\}/g, (whole, name: string) => values[name] ?? whole);
}

/** Real nginx (Debian's, scripts/test.sh installs it) from deploy/edge/nginx.conf.template, on a spare port. */
export async function startNginx(options: ProxyOptions): Promise<EdgeProxy> {
  const dir = mkdtempSync(join(tmpdir(), "latchkey-nginx-"));
  const port = await freePort();
  let config = fill(readFileSync(join(root, "deploy/edge/nginx.conf.template"), "utf8"), {
    LISTEN: `127.0.0.1:${port}`,
    LATCHKEY: options.latchkey,
    LATCHKEY_ROOT_KEY: options.rootKey,
    UPSTREAM: options.upstream,
    RUN_DIR: dir,
  });
  // As root, nginx's workers would run as nobody, who may not write the temporary folders here.
  if (process.getuid?.() === 0) config = `user root;\n${config}`;
  writeFileSync(join(dir, "nginx.conf"), config);
  return start(
    "nginx",
    "/usr/sbin/nginx",
    ["-p", dir, "-c", join(dir, "nginx.conf"), "-g", "daemon off;"],
    {},
    port,
    dir,
  );
}

/** Real Caddy (Debian's) from deploy/edge/Caddyfile, on a spare port. */
export async function startCaddy(options: ProxyOptions): Promise<EdgeProxy> {
  const dir = mkdtempSync(join(tmpdir(), "latchkey-caddy-"));
  const port = await freePort();
  mkdirSync(join(dir, "home"));
  return start(
    "caddy",
    "/usr/bin/caddy",
    ["run", "--config", join(root, "deploy/edge/Caddyfile"), "--adapter", "caddyfile"],
    {
      LISTEN: `http://127.0.0.1:${port}`,
      LATCHKEY: options.latchkey,
      LATCHKEY_ROOT_KEY: options.rootKey,
      UPSTREAM: options.upstream,
      // Caddy keeps its state under HOME (XDG_*): here, not in the user's home.
      HOME: join(dir, "home"),
      XDG_DATA_HOME: join(dir, "home"),
      XDG_CONFIG_HOME: join(dir, "home"),
    },
    port,
    dir,
  );
}

async function start(
  name: EdgeProxy["name"],
  command: string,
  args: string[],
  env: Record<string, string>,
  port: number,
  dir: string,
): Promise<EdgeProxy> {
  let output = "";
  const child: ChildProcess = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => {
    output += d;
  });
  child.stderr!.on("data", (d) => {
    output += d;
  });
  const deadline = Date.now() + 20_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null)
      throw new Error(`${name} exited with ${child.exitCode}:\n${output}${errorLog(dir)}`);
    if (Date.now() > deadline)
      throw new Error(`${name} did not listen on ${port}:\n${output}${errorLog(dir)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    output: () => output + errorLog(dir),
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null) return done();
        child.once("exit", done);
        // nginx stops at once on SIGTERM (SIGQUIT would wait for keep-alive connections).
        child.kill("SIGTERM");
      }),
  };
}

function errorLog(dir: string): string {
  try {
    return `\n${readFileSync(join(dir, "error.log"), "utf8")}`;
  } catch {
    return "";
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}
