import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import type { CallerSchema, RatelimitConfigSchema } from "@latchkey/proto/common/v1/common_pb";
import type { IdentityChanged } from "@latchkey/proto/identity/v1/events_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { createLogger, MemoryBus, onIdentityChanged, TestClock } from "@latchkey/runtime";
import { createMemoryIdentityDeps } from "../src/deps.ts";
import { identityRoutes } from "../src/routes.ts";

type Caller = MessageInitShape<typeof CallerSchema>;
type Ratelimit = MessageInitShape<typeof RatelimitConfigSchema>;

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

/** The service in memory behind createRouterTransport, with its store, clock and every event it published. */
export function harness() {
  const clock = new TestClock();
  const bus = new MemoryBus();
  const deps = createMemoryIdentityDeps({ bus, clock, log: createLogger("identity", "silent") });
  const client: Client<typeof IdentityService> = createClient(
    IdentityService,
    createRouterTransport(identityRoutes(deps)),
  );
  const events: IdentityChanged[] = [];
  onIdentityChanged(bus, (e) => events.push(e));

  const all = root("*");
  const seed = {
    identity: async (
      externalId: string,
      over: { metaJson?: string; ratelimits?: Ratelimit[]; caller?: Caller } = {},
    ) => {
      const { identityId } = await client.createIdentity({
        caller: over.caller ?? all,
        externalId,
        ...(over.metaJson !== undefined ? { metaJson: over.metaJson } : {}),
        ratelimits: over.ratelimits ?? [],
      });
      return identityId;
    },
    permission: async (slug: string, over: { name?: string; description?: string; caller?: Caller } = {}) => {
      const { permissionId } = await client.createPermission({
        caller: over.caller ?? all,
        slug,
        name: over.name ?? slug,
        ...(over.description !== undefined ? { description: over.description } : {}),
      });
      return permissionId;
    },
    role: async (
      name: string,
      permissions: string[] = [],
      over: { description?: string; caller?: Caller } = {},
    ) => {
      const { roleId } = await client.createRole({
        caller: over.caller ?? all,
        name,
        permissions,
        ...(over.description !== undefined ? { description: over.description } : {}),
      });
      return roleId;
    },
  };
  return { deps, client, clock, events, seed };
}

export { expectReason, lacks } from "@latchkey/runtime/testing/expect-reason";
