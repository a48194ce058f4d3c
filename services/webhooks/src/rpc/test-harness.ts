import { type Client, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import type { ErrorReason as Reason } from "@latchkey/proto/common/v1/common_pb";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { createLogger, ErrorReason, errorDetailOf, TestClock } from "@latchkey/runtime";
import { expect } from "vitest";
import { createMemoryWebhookDeps } from "../deps.ts";
import { webhookRoutes } from "../routes.ts";
import type { WebhookSettings } from "../settings.ts";

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

/** Asserts the call fails with `reason`, and with the message and field location given. */
export async function expectReason(
  call: Promise<unknown>,
  reason: Reason,
  expected: { message?: string | RegExp; location?: string } = {},
): Promise<ConnectError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "the call should have failed").toBeInstanceOf(ConnectError);
  const connectError = err as ConnectError;
  expect(ErrorReason[errorDetailOf(connectError)?.reason ?? ErrorReason.UNSPECIFIED]).toBe(
    ErrorReason[reason],
  );
  if (expected.message !== undefined) {
    if (typeof expected.message === "string") expect(connectError.rawMessage).toBe(expected.message);
    else expect(connectError.rawMessage).toMatch(expected.message);
  }
  if (expected.location !== undefined) {
    expect(errorDetailOf(connectError)?.violations.map((v) => v.location)).toEqual([expected.location]);
  }
  return connectError;
}

export const lacks = (permission: string) => `The root key lacks the permission '${permission}'.`;
