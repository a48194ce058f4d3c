import { createLogger, env, internalTransport, NatsBus, systemClock } from "@latchkey/runtime";
import { createGateway, listen } from "./gateway.ts";

// The gateway as its own process: configuration from env, services over the internal transport.
const log = createLogger("gateway", env.string("LOG_LEVEL", "info"));
const natsUrl = env.string("NATS_URL");
const bus = natsUrl === undefined ? undefined : await NatsBus.connect(natsUrl, log, "gateway");

const gateway = createGateway({
  // Each URL may be a comma-separated list of instances, called in turn.
  keys: internalTransport(env.string("KEYS_URL", "http://127.0.0.1:7071")!),
  ratelimit: internalTransport(env.string("RATELIMIT_URL", "http://127.0.0.1:7072")!),
  identity: internalTransport(env.string("IDENTITY_URL", "http://127.0.0.1:7073")!),
  analytics: internalTransport(env.string("ANALYTICS_URL", "http://127.0.0.1:7074")!),
  log,
  clock: systemClock,
  bus,
  rootKeyCacheTtlMs: env.int("ROOT_KEY_CACHE_TTL_MS", 5_000),
});
const server = await listen(gateway, env.int("PORT", 7070));
log.info({ port: server.port }, "gateway listening");

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, async () => {
    await server.close();
    await bus?.close();
    process.exit(0);
  });
}
