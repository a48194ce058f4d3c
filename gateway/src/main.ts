import { consolePages } from "@latchkey/console/pages";
import { verifyKeyBatchCodecs } from "@latchkey/proto/codecs/keys";
import { ratelimitCodecs } from "@latchkey/proto/codecs/ratelimit";
import type { WireCodecs } from "@latchkey/proto/codecs/wire/codec";
import {
  type ContextName,
  contextUrls,
  createLogger,
  env,
  InternalAuth,
  internalTransport,
  NatsBus,
  runProcess,
  systemClock,
} from "@latchkey/runtime";
import { TrustedProxies } from "./client-address.ts";
import { createGateway } from "./gateway.ts";
import { listen } from "./listen.ts";
import { metricsPortOf, serveMetrics } from "./metrics-server.ts";
import { parsePublicUrl } from "./portal-web.ts";
import { gatewayStarting, rootKeyCacheTtlMsFromEnv } from "./starting.ts";

// The gateway as its own process: configuration from env, the services over the internal transport
// at the URLs their settings name (packages/runtime/src/contexts.ts).
const log = createLogger("gateway", env.string("LOG_LEVEL", "info"));

/** The hot batched calls with hand-written protobuf, each from the service that owns it: VerifyKeyBatch, LimitBatch. */
const codecs: Partial<Record<ContextName, WireCodecs>> = {
  keys: verifyKeyBatchCodecs,
  ratelimit: ratelimitCodecs,
};
/** The services every request may need: the gateway is ready when they are. */
const needed: readonly ContextName[] = ["keys", "ratelimit", "identity"];

await runProcess({
  name: "gateway",
  log,
  answers: gatewayStarting,
  settings() {
    const metrics = {
      value: env.string("METRICS_PORT", "9464")!,
      chosen: process.env["METRICS_PORT"] !== undefined,
    };
    metricsPortOf(metrics.value);
    const trustedProxies = env.string("TRUSTED_PROXIES") ?? "";
    TrustedProxies.parse(trustedProxies);
    // The portal's base URL and origin (docs/portal.md); a bad one stops the start, naming it.
    const publicUrl = env.string("PUBLIC_URL") ?? "";
    if (publicUrl.trim() !== "") parsePublicUrl(publicUrl);
    return {
      port: env.int("PORT", 7070),
      host: "0.0.0.0",
      // Signs every call with the callers it resolved from root keys: the services accept no other.
      auth: InternalAuth.fromEnv(),
      // A service that does not answer within this is answered 503 (keys' own calls have shorter deadlines).
      timeoutMs: env.int("RPC_TIMEOUT_MS", 5_000, 1),
      // Analytics queries may run up to ClickHouse's max_execution_time (30 s).
      analyticsTimeoutMs: env.int("ANALYTICS_RPC_TIMEOUT_MS", 35_000, 1),
      natsUrl: env.string("NATS_URL"),
      // Each URL may be a comma-separated list of instances, called in turn.
      urls: contextUrls(),
      rootKeyCacheTtlMs: rootKeyCacheTtlMsFromEnv(),
      trustedProxies,
      publicUrl,
      metrics,
    };
  },
  async start(s, boot) {
    const natsUrl = s.natsUrl;
    const bus =
      natsUrl === undefined
        ? undefined
        : await boot.until("NATS", () => NatsBus.connect(natsUrl, log, "gateway"));
    if (bus) boot.onStop(() => bus.close());
    const transports = Object.fromEntries(
      Object.entries(s.urls).map(([name, url]) => [
        name,
        internalTransport(url, {
          auth: s.auth,
          timeoutMs: name === "analytics" ? s.analyticsTimeoutMs : s.timeoutMs,
          ...(codecs[name as ContextName] ? { codecs: codecs[name as ContextName] } : {}),
        }),
      ]),
    ) as Record<ContextName, ReturnType<typeof internalTransport>>;
    /** Ready when every instance of the services a request may need is ready. */
    const probe = {
      async ready() {
        const instances = needed.flatMap((name) => s.urls[name].split(",").map((x) => x.trim()));
        const answers = await Promise.all(
          instances.map((u) =>
            fetch(`${u}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
              (r) => r.ok,
              () => false,
            ),
          ),
        );
        return answers.every(Boolean);
      },
    };
    const gateway = createGateway({
      ...transports,
      probe,
      log,
      clock: systemClock,
      bus,
      rootKeyCacheTtlMs: s.rootKeyCacheTtlMs,
      trustedProxies: s.trustedProxies,
      publicUrl: s.publicUrl,
      // The web console at / and the portal web app at /portal/ when built (deploy/build.ts builds both into the
      // image); CONSOLE=false and PORTAL_APP=false leave each out.
      pages: consolePages(),
    });
    const server = await listen(gateway, boot.port, s.host);
    boot.onStop(() => server.close());
    // Prometheus scrapes a port of its own: the public port does not answer /metrics.
    const metrics = await serveMetrics(s.metrics, "0.0.0.0", log);
    if (metrics) boot.onStop(() => metrics.close());
    log.info({ port: server.port, metricsPort: metrics?.port }, "gateway listening");
  },
});
