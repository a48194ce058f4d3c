import { createRouterTransport, type Transport } from "@connectrpc/connect";
import { analyticsRoutes, createMemoryAnalyticsDeps } from "@latchkey/analytics";
import { createGateway, type GatewayDeps } from "@latchkey/gateway";
import { createMemoryIdentityDeps, identityRoutes } from "@latchkey/identity";
import { keysRoutes } from "@latchkey/keys";
import { createMemoryKeysDeps } from "@latchkey/keys/testing/keys-deps";
import { createMemoryPortalDeps, type PortalSettings, portalRoutes } from "@latchkey/portal";
import { createMemoryRatelimitDeps, ratelimitRoutes } from "@latchkey/ratelimit";
import { type ContextName, createLogger, hashKey, MemoryBus, TestClock } from "@latchkey/runtime";
import { createMemoryWebhookDeps, webhookRoutes } from "@latchkey/webhooks";

/**
 * The gateway over the real services, in memory, on one bus and one clock: the gateway's routes must agree
 * with what the services accept and answer. Keys and the gateway share one identity and one ratelimit service,
 * as they do in `npm start`, so roles made through the gateway exist for keys. The gateway package cannot
 * import the services (docs/architecture.md, "Layers"), so these tests live here.
 */
export function inMemoryStack(
  name: string,
  options: {
    encryptionKey?: Buffer;
    portal?: Partial<PortalSettings>;
    publicUrl?: string;
    gateway?: Pick<GatewayDeps, "forwardAuthPolicies" | "trustedProxies">;
  } = {},
) {
  const clock = new TestClock(Date.UTC(2026, 0, 1));
  const bus = new MemoryBus();
  const identity = createRouterTransport(
    identityRoutes(createMemoryIdentityDeps({ bus, clock, log: createLogger("identity", "silent") })),
  );
  const ratelimit = createRouterTransport(ratelimitRoutes(createMemoryRatelimitDeps({ bus, clock })));
  const keysDeps = createMemoryKeysDeps({
    bus,
    clock,
    identity,
    ratelimit,
    ...(options.encryptionKey ? { encryptionKey: options.encryptionKey } : {}),
    log: createLogger("keys", "silent"),
  });
  const keys = createRouterTransport(keysRoutes(keysDeps));
  const analyticsDeps = createMemoryAnalyticsDeps({ log: createLogger("analytics", "silent") });
  const analytics = createRouterTransport(analyticsRoutes(analyticsDeps));
  const portalDeps = createMemoryPortalDeps({
    keys,
    analytics,
    clock,
    log: createLogger("portal", "silent"),
    ...(options.portal ? { settings: options.portal } : {}),
  });
  // One transport per context of packages/runtime/src/contexts.ts: a new one fails to compile here until it is composed.
  const transports: Record<ContextName, Transport> = {
    keys,
    ratelimit,
    identity,
    analytics,
    webhooks: createRouterTransport(
      webhookRoutes(createMemoryWebhookDeps({ clock, log: createLogger("webhooks", "silent") })),
    ),
    portal: createRouterTransport(portalRoutes(portalDeps)),
  };
  const gateway = createGateway({
    ...transports,
    log: createLogger("gateway", "silent"),
    clock,
    bus,
    publicUrl: options.publicUrl ?? "",
    ...options.gateway,
  });
  // A root key holding every permission, in a workspace of its own.
  const rootKey = `lk_root_${name}`;
  keysDeps.store.putRootKey({
    id: `rk_${name}`,
    workspaceId: `ws_${name}`,
    permissions: ["*"],
    revokedAt: null,
    hash: hashKey(rootKey),
  });
  return { clock, bus, gateway, keysDeps, portalDeps, analyticsDeps, rootKey };
}
