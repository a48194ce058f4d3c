import { type Client, createClient, createRouterTransport, type Transport } from "@connectrpc/connect";
import { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import { createLogger, TestClock } from "@latchkey/runtime";
import { createMemoryPortalDeps } from "../src/deps.ts";
import { portalRoutes } from "../src/routes.ts";
import type { PortalSettings } from "../src/settings.ts";
import { portalRecord } from "./portal-store.suite.ts";

export const WS = "ws_test";

/** A caller of the test workspace holding `permissions`, as the gateway resolves it from a root key. */
export const root = (...permissions: string[]) => ({ workspaceId: WS, rootKeyId: "rk_test", permissions });

/**
 * The service over the memory store, its keys and analytics services those given (by default, none:
 * what a test calls of them fails), with a portal of the test workspace seeded.
 */
export async function harness(
  options: { keys?: Transport; analytics?: Transport; settings?: Partial<PortalSettings> } = {},
) {
  const clock = new TestClock(Date.UTC(2026, 0, 1));
  const none = createRouterTransport(() => {});
  const deps = createMemoryPortalDeps({
    keys: options.keys ?? none,
    analytics: options.analytics ?? none,
    clock,
    log: createLogger("portal", "silent"),
    ...(options.settings ? { settings: options.settings } : {}),
  });
  const client: Client<typeof PortalService> = createClient(
    PortalService,
    createRouterTransport(portalRoutes(deps)),
  );
  const portal = portalRecord(WS, {
    apiId: "api_1",
    slug: "acme",
    sessionTtlMs: 3_600_000,
    createdAt: clock.now(),
  });
  deps.store.portals.set(portal.id, portal);
  return { deps, client, clock, portal };
}

export { expectReason } from "@latchkey/runtime/testing/expect-reason";
