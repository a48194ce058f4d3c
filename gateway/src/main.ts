import { consolePages } from "@latchkey/console/pages";
import { verifyKeyBatchCodecs } from "@latchkey/proto/codecs/keys";
import { ratelimitCodecs } from "@latchkey/proto/codecs/ratelimit";
import { createLogger, env, InternalAuth, internalTransport, NatsBus, systemClock } from "@latchkey/runtime";
import { createGateway } from "./gateway.ts";
import { listen } from "./listen.ts";
import { serveMetrics } from "./metrics-server.ts";

// The gateway as its own process: configuration from env, services over the internal transport.
const log = createLogger("gateway", env.string("LOG_LEVEL", "info"));
// Signs every call with the callers it resolved from root keys: the services accept no other.
const auth = InternalAuth.fromEnv();
// A service that does not answer within this is answered 503 (keys' own calls have shorter deadlines).
const timeoutMs = env.int("RPC_TIMEOUT_MS", 5_000, 1);
// Analytics queries may run up to ClickHouse's max_execution_time (30 s).
const analyticsTimeoutMs = env.int("ANALYTICS_RPC_TIMEOUT_MS", 35_000, 1);
const natsUrl = env.string("NATS_URL");
const bus = natsUrl === undefined ? undefined : await NatsBus.connect(natsUrl, log, "gateway");

const urls = {
  keys: env.string("KEYS_URL", "http://127.0.0.1:7071")!,
  ratelimit: env.string("RATELIMIT_URL", "http://127.0.0.1:7072")!,
  identity: env.string("IDENTITY_URL", "http://127.0.0.1:7073")!,
  analytics: env.string("ANALYTICS_URL", "http://127.0.0.1:7074")!,
  webhooks: env.string("WEBHOOKS_URL", "http://127.0.0.1:7075")!,
};

/** Ready when every instance of the services a request may need answers its liveness probe. */
const probe = {
  async ready() {
    const instances = [urls.keys, urls.ratelimit, urls.identity].flatMap((u) =>
      u.split(",").map((x) => x.trim()),
    );
    const answers = await Promise.all(
      instances.map((u) =>
        fetch(`${u}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
          (r) => r.ok,
          () => false,
        ),
      ),
    );
    return answers.every(Boolean);
  },
};

const gateway = createGateway({
  // Each URL may be a comma-separated list of instances, called in turn.
  // The hot batched calls with hand-written protobuf, each from the service that owns it: VerifyKeyBatch, LimitBatch.
  keys: internalTransport(urls.keys, { auth, timeoutMs, codecs: verifyKeyBatchCodecs }),
  ratelimit: internalTransport(urls.ratelimit, { auth, timeoutMs, codecs: ratelimitCodecs }),
  identity: internalTransport(urls.identity, { auth, timeoutMs }),
  analytics: internalTransport(urls.analytics, { auth, timeoutMs: analyticsTimeoutMs }),
  webhooks: internalTransport(urls.webhooks, { auth, timeoutMs }),
  probe,
  log,
  clock: systemClock,
  bus,
  rootKeyCacheTtlMs: env.int("ROOT_KEY_CACHE_TTL_MS", 5_000),
  // The web console at / when it was built (deploy/build.ts builds it into the image); CONSOLE=false: none.
  pages: consolePages(),
});
const server = await listen(gateway, env.int("PORT", 7070));
// Prometheus scrapes a port of its own: the public port does not answer /metrics.
const metrics = await serveMetrics(
  { value: env.string("METRICS_PORT", "9464")!, chosen: process.env["METRICS_PORT"] !== undefined },
  "0.0.0.0",
  log,
);
log.info({ port: server.port, metricsPort: metrics?.port }, "gateway listening");

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, async () => {
    await server.close();
    await metrics?.close();
    await bus?.close();
    process.exit(0);
  });
}
