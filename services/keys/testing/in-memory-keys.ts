import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { createMemoryIdentityDeps, identityRoutes } from "@latchkey/identity";
import { type ErrorReason, ErrorReason as ErrorReasonEnum } from "@latchkey/proto/common/v1/common_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { type CreateKeyRequestSchema, KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import {
  type Bus,
  createLogger,
  type EventSink,
  errorDetailOf,
  hashKey,
  MemoryBus,
  TestClock,
} from "@latchkey/runtime";
import { callerOf } from "@latchkey/runtime/testing/caller";
import { keysRoutes } from "../src/routes.ts";
import { createMemoryKeysDeps } from "./keys-deps.ts";

export { callerOf };

/** A key-encryption key for tests that create recoverable keys. */
export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7);

/** The keys service in memory, reached through Connect exactly as the gateway reaches it. */
export function memoryKeys(
  options: {
    bus?: Bus;
    events?: EventSink;
    encryptionKey?: Buffer;
    cacheSize?: number;
    cacheMaxBytes?: number;
    identityCacheMaxBytes?: number;
  } = {},
) {
  const clock = new TestClock();
  const bus = options.bus ?? new MemoryBus();
  // The real identity service in memory, on the same bus and clock, reachable for seeding roles and permissions.
  const identityTransport = createRouterTransport(
    identityRoutes(createMemoryIdentityDeps({ bus, clock, log: createLogger("identity", "silent") })),
  );
  const identity: Client<typeof IdentityService> = createClient(IdentityService, identityTransport);
  const deps = createMemoryKeysDeps({
    bus,
    clock,
    identity: identityTransport,
    ...(options.events ? { events: options.events } : {}),
    ...(options.encryptionKey ? { encryptionKey: options.encryptionKey } : {}),
    ...(options.cacheSize ? { cacheSize: options.cacheSize } : {}),
    ...(options.cacheMaxBytes ? { cacheMaxBytes: options.cacheMaxBytes } : {}),
    ...(options.identityCacheMaxBytes ? { identityCacheMaxBytes: options.identityCacheMaxBytes } : {}),
  });
  const client: Client<typeof KeysService> = createClient(
    KeysService,
    createRouterTransport(keysRoutes(deps)),
  );
  const admin = callerOf("ws_1", "*");
  const seed = {
    /** An API of the workspace (default ws_1). */
    async api(workspaceId = "ws_1"): Promise<string> {
      const { apiId } = await client.createApi({ caller: callerOf(workspaceId, "*"), name: "seeded" });
      return apiId;
    },
    /** A key with the given createKey fields; `credits` is shorthand for a plain balance. */
    async key(
      fields: Omit<MessageInitShape<typeof CreateKeyRequestSchema>, "credits" | "caller" | "$typeName"> & {
        apiId: string;
        credits?: number;
        workspaceId?: string;
      },
    ) {
      const { credits, workspaceId, ...rest } = fields;
      const res = await client.createKey({
        caller: callerOf(workspaceId ?? "ws_1", "*"),
        ...rest,
        ...(credits !== undefined ? { credits: { remaining: BigInt(credits) } } : {}),
      });
      return { keyId: res.keyId, key: res.key, hash: hashKey(res.key) };
    },
    rootKey(workspaceId: string, permissions: string[], revokedAt: number | null = null) {
      const plaintext = `lk_root_test_${Math.random().toString(36).slice(2)}`;
      const id = `rk_${Math.random().toString(36).slice(2)}`;
      deps.store.putRootKey({ id, workspaceId, permissions, revokedAt, hash: hashKey(plaintext) });
      return { id, hash: hashKey(plaintext) };
    },
  };
  const rbac = {
    /** A permission of ws_1 (name = slug); answers its id. */
    async permission(slug: string, description?: string): Promise<string> {
      const { permissionId } = await identity.createPermission({
        caller: admin,
        name: slug,
        slug,
        ...(description !== undefined && { description }),
      });
      return permissionId;
    },
    /** A role of ws_1 with these permission slugs (created when missing); answers its id. */
    async role(name: string, permissions: string[] = [], workspaceId = "ws_1"): Promise<string> {
      const { roleId } = await identity.createRole({
        caller: callerOf(workspaceId, "*"),
        name,
        permissions,
      });
      return roleId;
    },
  };
  return { deps, client, clock, seed, admin, identity, rbac };
}

/** The domain reason and message of what `promise` rejected with. */
export async function rejection(
  promise: Promise<unknown>,
): Promise<{ reason: ErrorReason | undefined; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (!(err instanceof ConnectError)) throw err;
    return { reason: errorDetailOf(err)?.reason, message: err.rawMessage };
  }
  throw new Error("expected the call to fail, it succeeded");
}

/** Where an INVALID_INPUT rejection points (its first violation's location), with its message. */
export async function invalidAt(promise: Promise<unknown>): Promise<{ location: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (!(err instanceof ConnectError)) throw err;
    const detail = errorDetailOf(err);
    if (detail?.reason !== ErrorReasonEnum.INVALID_INPUT) throw err;
    return { location: detail.violations[0]?.location ?? "", message: err.rawMessage };
  }
  throw new Error("expected the call to fail, it succeeded");
}
