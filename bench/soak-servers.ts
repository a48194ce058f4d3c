import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "@latchkey/runtime/testing/free-port";
import { ownNatsServer } from "@latchkey/runtime/testing/nats-server";
import { pidsMatching } from "./procfs.ts";

/**
 * The servers `npm run soak` (bench/soak.ts) runs Latchkey on. NATS, Redis and ClickHouse are the
 * soak's own, on free ports with their data under its temporary folder, because its faults kill and
 * restart them: the machine's shared servers (4222, 6379, 8123) are never touched. (PostgreSQL is
 * the machine's, in a fresh database of the soak's own: bench/soak.ts.)
 */

const root = join(import.meta.dirname, "..");
const run = promisify(execFile);

/** A server the soak can kill (SIGKILL, as abrupt as a crash) and start again with the same data. */
export interface OwnServer {
  name: string;
  url: string;
  /** Its process, for the CPU it uses (none while it is down). */
  pids(): number[];
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function until(what: string, ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`${what} was not ready within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A child the soak started, killed with SIGKILL and awaited. */
async function kill(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

const alive = (child: ChildProcess | undefined) =>
  child?.pid !== undefined && child.exitCode === null && child.signalCode === null ? [child.pid] : [];

/** nats-server with JetStream, its store on disk (ownNatsServer), so a restart keeps the stream. */
export async function soakNats(): Promise<OwnServer & { close(): Promise<void> }> {
  const nats = await ownNatsServer();
  // ownNatsServer keeps its child to itself: found by the port on its command line.
  const pids = () => pidsMatching(`\u0000-p\u0000${nats.port}\u0000`);
  return { name: "nats", url: nats.url, pids, start: nats.start, stop: nats.stop, close: nats.close };
}

/**
 * redis-server with an append-only file (fsync every second), as the Redis overlay's Valkey runs, so
 * a restart keeps the counters: what the soak measures of Redis's memory is then the counters'
 * growth, not a restart's reset. `maxmemory` with `noeviction`, as services/ratelimit/README.md
 * asks: a workspace that could fill it would turn every other workspace's checks into 503s.
 */
export async function soakRedis(dir: string, maxmemory: string): Promise<OwnServer> {
  const port = await freePort();
  const data = join(dir, "redis");
  mkdirSync(data, { recursive: true });
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        data,
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--maxmemory",
        maxmemory,
        "--maxmemory-policy",
        "noeviction",
      ],
      { stdio: "ignore" },
    );
    // Listening is not enough: it answers LOADING while it reads the append-only file back.
    await until("redis-server", () => redisAnswers(port), 60_000);
  };
  await start();
  return {
    name: "redis",
    url: `redis://127.0.0.1:${port}`,
    pids: () => alive(child),
    start,
    stop: () => kill(child),
  };
}

/** Whether Redis answers PING with PONG (not LOADING), over a raw socket. */
function redisAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => s.write("PING\r\n"));
    s.setTimeout(1_000, () => {
      s.destroy();
      resolve(false);
    });
    s.on("data", (d) => {
      s.destroy();
      resolve(d.toString().startsWith("+PONG"));
    });
    s.on("error", () => resolve(false));
  });
}

/**
 * clickhouse-server (18.16 here) from a configuration generated under `dir`: its own ports, data,
 * logs, a default user for Latchkey's ingest (CLICKHOUSE_URL) and, written by
 * scripts/clickhouse-users.sh, the read-only query user of tenants' raw queries
 * (CLICKHOUSE_QUERY_URL, docs/analytics-queries.md) allowed the database `database` only.
 */
export async function soakClickHouse(
  dir: string,
  database: string,
): Promise<OwnServer & { queryUrl: string }> {
  const http = await freePort();
  const tcp = await freePort();
  const home = join(dir, "clickhouse");
  for (const sub of ["data", "tmp", "user_files", "log", "users.d"])
    mkdirSync(join(home, sub), { recursive: true });
  writeFileSync(
    join(home, "config.xml"),
    `<?xml version="1.0"?>
<!-- Written by bench/soak-servers.ts for one soak run. -->
<yandex>
  <logger><level>warning</level><log>${home}/log/server.log</log><errorlog>${home}/log/err.log</errorlog><size>50M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host><http_port>${http}</http_port><tcp_port>${tcp}</tcp_port>
  <path>${home}/data/</path><tmp_path>${home}/tmp/</tmp_path><user_files_path>${home}/user_files/</user_files_path>
  <users_config>${home}/users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database>
  <timezone>UTC</timezone><mark_cache_size>268435456</mark_cache_size><uncompressed_cache_size>268435456</uncompressed_cache_size>
</yandex>
`,
  );
  writeFileSync(
    join(home, "users.xml"),
    `<?xml version="1.0"?>
<yandex>
  <profiles><default><allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`,
  );
  const url = `http://127.0.0.1:${http}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    // At a lower CPU priority (nice 10, every thread of it): a deployment gives ClickHouse machines of its
    // own, so the attacker's heaviest permitted queries, bounded per workspace inside ClickHouse, must not
    // stand in for a noisy neighbour on the cores Latchkey verifies on (docs/reliability.md).
    child = spawn("nice", ["-n", "10", "/usr/sbin/clickhouse-server", `--config-file=${home}/config.xml`], {
      stdio: "ignore",
      cwd: home,
    });
    await until(
      "clickhouse-server",
      () =>
        fetch(`${url}/ping`).then(
          (r) => r.ok,
          () => false,
        ),
      60_000,
    );
  };
  await start();
  const user = "latchkey_query";
  const password = randomBytes(12).toString("hex");
  await run("bash", [join(root, "scripts/clickhouse-users.sh")], {
    env: {
      ...process.env,
      CLICKHOUSE_HTTP: url,
      CLICKHOUSE_USERS_DIR: join(home, "users.d"),
      CLICKHOUSE_QUERY_USER: user,
      CLICKHOUSE_QUERY_PASSWORD: password,
      CLICKHOUSE_QUERY_DATABASES: database,
    },
  });
  return {
    name: "clickhouse",
    url,
    queryUrl: `http://${user}:${password}@127.0.0.1:${http}/${database}`,
    pids: () => alive(child),
    start,
    stop: () => kill(child),
  };
}
