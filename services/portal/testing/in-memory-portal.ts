import { type Client, createClient, createRouterTransport, type Transport } from "@connectrpc/connect";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import { createLogger, domainError, ErrorReason, TestClock } from "@latchkey/runtime";
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

/** One call the fake keys service received: the RPC, the permissions its caller held, and what it asked. */
export interface KeysCall {
  rpc: "getApi" | "getKey" | "rerollKey" | "createKey";
  permissions: string[];
  recoverable?: boolean;
}

/**
 * A keys service standing in for the real one: the portal's API (api_1) holds a recoverable key when
 * `holdsRecoverableKeys`; `keys` are its keys by id, each its end user's, whether recoverable, and
 * the roles and direct permissions it holds (none unless given).
 * Every call is recorded with its caller's permissions, so a test sees exactly what a session hands on.
 */
export function fakeKeys(options: {
  holdsRecoverableKeys: boolean;
  keys?: Record<
    string,
    { externalId: string; recoverable: boolean; roles?: string[]; permissions?: string[] }
  >;
}) {
  const calls: KeysCall[] = [];
  const transport = createRouterTransport(({ service }) =>
    service(KeysService, {
      getApi(req) {
        calls.push({ rpc: "getApi", permissions: req.caller?.permissions ?? [] });
        return { api: { id: req.apiId, name: "api" }, holdsRecoverableKeys: options.holdsRecoverableKeys };
      },
      getKey(req) {
        calls.push({ rpc: "getKey", permissions: req.caller?.permissions ?? [] });
        const key = options.keys?.[req.keyId];
        if (!key) throw domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
        return {
          key: {
            keyId: req.keyId,
            apiId: "api_1",
            identity: { id: "id_1", externalId: key.externalId },
            recoverable: key.recoverable,
            roles: key.roles ?? [],
            permissions: key.permissions ?? [],
          },
        };
      },
      rerollKey(req) {
        calls.push({ rpc: "rerollKey", permissions: req.caller?.permissions ?? [] });
        return { keyId: "key_rerolled", key: "sk_rerolled" };
      },
      createKey(req) {
        calls.push({
          rpc: "createKey",
          permissions: req.caller?.permissions ?? [],
          recoverable: req.recoverable,
        });
        return { keyId: "key_created", key: "sk_created" };
      },
    }),
  );
  return { transport, calls };
}
