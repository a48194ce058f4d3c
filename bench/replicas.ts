import { freePort, type Proc, startProcess } from "../test/testing/process-stack.ts";

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
        await startProcess(
          `ratelimit-replica-${i}`,
          "services/ratelimit/src/main.ts",
          {
            DATABASE_URL: databaseUrl,
            NATS_URL: natsUrl,
            RATELIMIT_PEERS: urls.join(","),
            RATELIMIT_SELF: urls[i]!,
          },
          port,
        ),
      );
    }
  } catch (err) {
    await Promise.all(started.map((p) => p.stop()));
    throw err;
  }
  return started;
}
