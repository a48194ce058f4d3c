import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateKeyRequest, CreateKeyResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, need, newId, requirePermissions, resourcesOf, succeeded } from "@latchkey/runtime";
import { apiNotFound, authenticatedCaller, requireOrMask, visibleApi } from "../access.ts";
import { validAllowList } from "../allow-list.ts";
import { apiResource, keyResource } from "../audit.ts";
import { validThresholds } from "../credit-thresholds.ts";
import type { KeysDeps } from "../deps.ts";
import { generateKey } from "../key-material.ts";
import { CHECKSUM_MARKER, prefixClaimsChecksum } from "../leaks/key-format.ts";
import { ensureIdentity, ensureInlinePermissions, requireRoles } from "../rbac.ts";
import { adding, grantChangePermissions } from "../rbac-changes.ts";
import { requireVault } from "../recovery.ts";
import type { KeyRatelimitRecord, RefillRecord } from "../store/keys-store.ts";
import { keyChangeCommitted } from "./key-changed.ts";
import { metaObject, validCredits, validExpires, validPermissions, validRatelimits } from "./validation.ts";

const PREFIX = /^[a-zA-Z0-9_]{1,16}$/;

export function createKey(deps: KeysDeps) {
  return async (req: CreateKeyRequest): Promise<MessageInitShape<typeof CreateKeyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const input = validCreateKey(req);
    // A root key that may not create keys here learns nothing about the API: Unkey masks it as 404.
    requireOrMask(caller, [need("api", input.apiId, "create_key")], apiNotFound);
    const api = await visibleApi(deps, caller, input.apiId);
    if (input.recoverable) requireOrMask(caller, [need("api", api.id, "encrypt_key")], apiNotFound);
    // Giving the new key roles or permissions needs what adding them to a key needs.
    requirePermissions(
      caller,
      grantChangePermissions({ roles: adding(input.roles), permissions: adding(input.permissions) }),
    );
    const vault = input.recoverable ? requireVault(deps) : undefined;
    const roles = (await requireRoles(deps, caller, input.roles)).map((r) => r.name);
    // As Unkey: the key's permission slugs exist from now on, created with no rbac permission asked.
    await ensureInlinePermissions(deps, caller, input.permissions);
    const identity = input.externalId === null ? null : await ensureIdentity(deps, caller, input.externalId);
    if (api.keyFormat !== "checksum" && input.prefix !== undefined && prefixClaimsChecksum(input.prefix)) {
      throw invalidInput(
        "/prefix",
        `a prefix ending in '${CHECKSUM_MARKER}' is kept for checksummed keys`,
        "Choose another prefix, or create the key under an API whose keyFormat is checksum.",
      );
    }
    const material = generateKey(input.prefix, input.byteLength, api.keyFormat);
    const keyId = newId("key");
    await deps.store.createKey(
      {
        id: keyId,
        workspaceId: caller.workspaceId,
        apiId: api.id,
        hash: material.hash,
        start: material.start,
        name: input.name,
        metaJson: input.metaJson,
        externalId: identity?.externalId ?? null,
        identityId: identity?.id ?? null,
        permissions: input.permissions,
        roles,
        expires: input.expires,
        enabled: input.enabled,
        remaining: input.remaining,
        refill: input.refill,
        createdAt: deps.clock.now(),
        ratelimits: input.ratelimits.map((r) => ({ ...r, id: newId("rl") })),
        byteLength: input.byteLength,
        ipAllowList: validAllowList(req.ipAllowList, "/ipAllowList"),
        creditThresholds: validThresholds(req.creditThresholds, "/creditThresholds"),
      },
      vault?.seal(keyId, caller.workspaceId, material.key),
      succeeded(
        deps,
        caller,
        "keys.createKey",
        [keyResource(keyId), apiResource(api.id), ...resourcesOf(["identity", identity?.id])],
        createKeyFields(req),
      ),
    );
    // Drops a negative cache entry for this hash wherever one exists.
    await keyChangeCommitted(
      deps,
      caller,
      { id: keyId, apiId: api.id, hash: material.hash },
      "key.created",
      {},
    );
    return { keyId, key: material.key };
  };
}

/** The names of the fields a createKey request sets, for its audit record (never their values). */
function createKeyFields(req: CreateKeyRequest): string[] {
  const given: [string, boolean][] = [
    ["prefix", req.prefix !== undefined],
    ["name", req.name !== undefined],
    ["byteLength", req.byteLength !== undefined],
    ["externalId", req.externalId !== undefined],
    ["meta", req.metaJson !== undefined],
    ["roles", req.roles.length > 0],
    ["permissions", req.permissions.length > 0],
    ["expires", req.expires !== undefined],
    ["credits", req.credits !== undefined],
    ["ratelimits", req.ratelimits.length > 0],
    ["enabled", req.enabled !== undefined],
    ["recoverable", req.recoverable],
    ["ipAllowList", req.ipAllowList.length > 0],
    ["creditThresholds", req.creditThresholds.length > 0],
  ];
  return given.filter(([, set]) => set).map(([name]) => name);
}

export interface CreateKeyInput {
  apiId: string;
  prefix: string | undefined;
  name: string | null;
  byteLength: number;
  externalId: string | null;
  metaJson: string | null;
  roles: string[];
  permissions: string[];
  expires: number | null;
  remaining: number | null;
  refill: RefillRecord | null;
  ratelimits: Omit<KeyRatelimitRecord, "id">[];
  enabled: boolean;
  recoverable: boolean;
}

/** Narrows the request to what the service relies on; the gateway has already checked lengths and patterns. */
export function validCreateKey(req: CreateKeyRequest): CreateKeyInput {
  if (req.apiId === "") throw invalidInput("/apiId", "apiId is required");
  if (req.prefix !== undefined && !PREFIX.test(req.prefix)) {
    throw invalidInput("/prefix", "prefix must be 1 to 16 letters, digits or underscores");
  }
  const byteLength = req.byteLength ?? 16;
  if (!Number.isInteger(byteLength) || byteLength < 16 || byteLength > 255) {
    throw invalidInput("/byteLength", `byteLength must be between 16 and 255, got ${byteLength}`);
  }
  return {
    apiId: req.apiId,
    prefix: req.prefix,
    name: req.name ?? null,
    byteLength,
    externalId: req.externalId ?? null,
    metaJson: metaObject(req.metaJson, "/meta"),
    roles: [...new Set(req.roles)],
    permissions: validPermissions(req.permissions, ""),
    expires: req.expires === undefined ? null : validExpires(req.expires, "/expires"),
    ...validCredits(req.credits, "/credits"),
    ratelimits: validRatelimits(req.ratelimits, ""),
    enabled: req.enabled ?? true,
    recoverable: req.recoverable,
  };
}
