import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { createLogger, TestClock } from "@latchkey/runtime";
import { createMemoryWebhookDeps } from "../src/deps.ts";
import { webhookRoutes } from "../src/routes.ts";
import type { WebhookSettings } from "../src/settings.ts";

export const WS = "ws_test";
export const OTHER_WS = "ws_other";

/** A caller of the test workspace holding `permissions`, as the gateway resolves it from a root key. */
export const root = (...permissions: string[]) => ({ workspaceId: WS, rootKeyId: "rk_test", permissions });
/** The same, in another workspace. */
export const otherRoot = (...permissions: string[]) => ({
  workspaceId: OTHER_WS,
  rootKeyId: "rk_other",
  permissions,
});

/** The service in memory behind createRouterTransport, with its store and clock. */
export function harness(settings: Partial<WebhookSettings> = {}) {
  const clock = new TestClock(Date.UTC(2026, 0, 1));
  const deps = createMemoryWebhookDeps({ clock, settings, log: createLogger("webhooks", "silent") });
  const client: Client<typeof WebhookService> = createClient(
    WebhookService,
    createRouterTransport(webhookRoutes(deps)),
  );
  const all = root("*");
  const create = async (over: { url?: string; events?: string[]; caller?: ReturnType<typeof root> } = {}) =>
    client.createWebhook({
      caller: over.caller ?? all,
      url: over.url ?? "https://example.com/hook",
      events: over.events ?? ["key.created"],
    });
  return { deps, client, clock, all, create };
}

export { expectReason, lacks } from "@latchkey/runtime/testing/expect-reason";
