import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport, type Transport } from "@connectrpc/connect";
import { createMemoryIdentityDeps, identityRoutes } from "@latchkey/identity";
import type { RatelimitConfig } from "@latchkey/proto/common/v1/common_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { KeysService, type VerifyKeyRequestSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { createMemoryRatelimitDeps, ratelimitRoutes } from "@latchkey/ratelimit";
import { createLogger, hashKey, MemoryBus, TestClock } from "@latchkey/runtime";
import { keyChanged } from "../src/events.ts";
import { keysRoutes } from "../src/routes.ts";
import { callerOf } from "./in-memory-keys.ts";
import { createMemoryKeysDeps } from "./keys-deps.ts";

type Limit = Pick<RatelimitConfig, "name" | "limit" | "duration" | "autoApply">;

/** Counts the calls a transport carries, by method name. */
function counted(inner: Transport, calls: Map<string, number>): Transport {
  return {
    unary: (method, ...rest) => {
      calls.set(method.name, (calls.get(method.name) ?? 0) + 1);
      return inner.unary(method, ...rest);
    },
    stream: (...args) => inner.stream(...args),
  };
}

/**
 * The keys service in memory with the real identity and ratelimit services
 * behind it, on one bus and one clock, as verification meets them in
 * production. Calls to each are counted.
 */
export function verificationKit(
  options: {
    ratelimit?: Transport;
    ratelimitFailOpen?: boolean;
    /** Wraps the identity service as verification meets it (e.g. to make it time out). */
    identity?: (inner: Transport) => Transport;
  } = {},
) {
  const bus = new MemoryBus();
  const clock = new TestClock();
  const log = createLogger("keys", "silent");
  const calls = new Map<string, number>();
  const identityService = createRouterTransport(
    identityRoutes(createMemoryIdentityDeps({ bus, clock, log })),
  );
  const identityTransport = counted(options.identity?.(identityService) ?? identityService, calls);
  const ratelimitTransport = counted(
    options.ratelimit ?? createRouterTransport(ratelimitRoutes(createMemoryRatelimitDeps({ clock }))),
    calls,
  );
  const deps = createMemoryKeysDeps({
    bus,
    clock,
    log,
    identity: identityTransport,
    ratelimit: ratelimitTransport,
    ...(options.ratelimitFailOpen !== undefined && { ratelimitFailOpen: options.ratelimitFailOpen }),
  });
  const keys: Client<typeof KeysService> = createClient(KeysService, createRouterTransport(keysRoutes(deps)));
  const identity: Client<typeof IdentityService> = createClient(IdentityService, identityTransport);
  const admin = callerOf("ws_1", "*");
  const verifier = callerOf("ws_1", "api.*.verify_key");

  const seed = {
    async api(): Promise<string> {
      return (await keys.createApi({ caller: admin, name: "seeded" })).apiId;
    },
    /** A key; roles and the identity are linked in the store, as keys.setRoles and createKey would. */
    async key(fields: {
      apiId: string;
      credits?: number;
      permissions?: string[];
      roles?: string[];
      identityId?: string;
      ratelimits?: Limit[];
    }) {
      const { keyId, key } = await keys.createKey({
        caller: admin,
        apiId: fields.apiId,
        permissions: fields.permissions ?? [],
        ratelimits: fields.ratelimits ?? [],
        ...(fields.credits !== undefined ? { credits: { remaining: BigInt(fields.credits) } } : {}),
      });
      if (fields.roles || fields.identityId) {
        await deps.store.updateKey(keyId, {
          ...(fields.roles ? { roles: fields.roles } : {}),
          ...(fields.identityId ? { identityId: fields.identityId } : {}),
          updatedAt: clock.now(),
        });
        keyChanged(deps, { workspaceId: "ws_1", hash: hashKey(key), keyId });
      }
      return { keyId, key };
    },
    async role(name: string, permissions: string[]): Promise<void> {
      await identity.createRole({ caller: admin, name, permissions });
    },
    async identity(externalId: string, ratelimits: Limit[] = [], metaJson?: string): Promise<string> {
      const res = await identity.createIdentity({
        caller: admin,
        externalId,
        ratelimits,
        ...(metaJson ? { metaJson } : {}),
      });
      return res.identityId;
    },
  };

  const verify = (
    key: string,
    request: Omit<MessageInitShape<typeof VerifyKeyRequestSchema>, "$typeName" | "key" | "caller"> = {},
  ) => keys.verifyKey({ caller: verifier, key, ...request });
  const balance = async (keyId: string) => (await deps.store.findKeyById(keyId))?.remaining;

  return { deps, keys, identity, seed, verify, balance, clock, calls, admin, verifier };
}

/** A limit of a key or identity, in one line. */
export const limit = (name: string, max: number, autoApply: boolean, duration = 60_000): Limit => ({
  name,
  limit: BigInt(max),
  duration: BigInt(duration),
  autoApply,
});
