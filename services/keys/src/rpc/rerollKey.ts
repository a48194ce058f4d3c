import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RerollKeyRequest, RerollKeyResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, newId, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { generateKey } from "../key-material.ts";
import { withoutMarker } from "../leaks/key-format.ts";
import { existingRoles } from "../rbac.ts";
import { adding, grantChangePermissions } from "../rbac-changes.ts";
import { requireVault } from "../recovery.ts";
import { keyChangeCommitted } from "./key-changed.ts";
import { validExpires } from "./validation.ts";

const PREFIX = /^[a-zA-Z0-9_]{1,16}$/;

/**
 * A new key string with the original's configuration: API, prefix and length,
 * name, meta, externalId and identity, permissions, roles, rate limits (new
 * ids, same names), expiry, enabled, recoverability and credits.
 *
 * "Not its usage": the new key has no verification history of its own
 * (analytics and lastUsedAt start empty under its new id). Its balance is the
 * original's balance at the moment of the reroll, with the refill schedule
 * carried over (no extra refill): credits are an allowance, not usage, and a
 * reroll must not mint a fresh one. The original keeps its own balance while it
 * still works, so keep `expiration` short on keys with credits.
 *
 * The original stops working `expiration` ms from now (its expires becomes
 * now + expiration, or stays earlier if it already was); 0 stops it at once
 * (its expires becomes the millisecond before now).
 */
export function rerollKey(deps: KeysDeps) {
  return async (req: RerollKeyRequest): Promise<MessageInitShape<typeof RerollKeyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const expiration = validExpires(req.expiration, "/expiration");
    const original = await visibleKey(deps, caller, req.keyId);
    requirePermissions(caller, [
      need("api", original.apiId, "create_key"),
      ...(original.recoverable ? [need("api", original.apiId, "encrypt_key")] : []),
      // The new key is given the original's roles and permissions: a credential holding them that the
      // caller could not otherwise create.
      ...grantChangePermissions({
        roles: adding(original.roles),
        permissions: adding(original.permissions),
      }),
    ]);
    const vault = original.recoverable ? requireVault(deps) : undefined;
    // The roles that still exist: one deleted since is not carried over.
    const roles = (await existingRoles(deps, caller, original.roles)).map((r) => r.name);
    const byteLength = original.byteLength ?? 16;
    // The new key takes its API's format; a checksummed original's start holds the marker, not the prefix.
    const format = (await deps.store.findApi(original.apiId))?.keyFormat ?? "plain";
    const material = generateKey(withoutMarker(prefixOf(original.start)), byteLength, format);
    const keyId = newId("key");
    const now = deps.clock.now();
    const stopsAt = expiration === 0 ? now - 1 : now + expiration;
    const originalExpires = Math.min(original.expires ?? Number.MAX_SAFE_INTEGER, stopsAt);
    await deps.store.rerollKey(
      {
        id: keyId,
        workspaceId: original.workspaceId,
        apiId: original.apiId,
        hash: material.hash,
        start: material.start,
        name: original.name,
        metaJson: original.metaJson,
        externalId: original.externalId,
        identityId: original.identityId,
        permissions: original.permissions,
        roles,
        expires: original.expires,
        enabled: original.enabled,
        // The store hands over the balance as it is when the original is locked.
        remaining: original.remaining,
        refill: original.refill,
        createdAt: now,
        ratelimits: original.ratelimits.map((r) => ({ ...r, id: newId("rl") })),
        ipAllowList: original.ipAllowList ?? [],
        creditThresholds: original.creditThresholds ?? null,
        byteLength,
      },
      vault?.seal(keyId, original.workspaceId, material.key),
      original.id,
      originalExpires,
      succeeded(
        deps,
        caller,
        "keys.rerollKey",
        [keyResource(original.id), keyResource(keyId), apiResource(original.apiId)],
        ["expiration"],
      ),
    );
    await keyChangeCommitted(deps, caller, original, "key.rerolled", {
      newKeyId: keyId,
      expiresAt: expiration === 0 ? null : originalExpires,
    });
    await keyChanged(deps, {
      workspaceId: caller.workspaceId,
      hash: material.hash,
      keyId,
      apiId: original.apiId,
    });
    return { keyId, key: material.key };
  };
}

/** The prefix a key was generated with: its start up to the last "_" (base58 has none). */
function prefixOf(start: string): string | undefined {
  const end = start.lastIndexOf("_");
  const prefix = end > 0 ? start.slice(0, end) : undefined;
  return prefix !== undefined && PREFIX.test(prefix) ? prefix : undefined;
}
