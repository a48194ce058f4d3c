import type { MessageInitShape } from "@bufbuild/protobuf";
import type { MigrateKeysRequest, MigrateKeysResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import {
  invalidInput,
  need,
  newId,
  publishDomainEvent,
  requirePermissions,
  succeeded,
} from "@latchkey/runtime";
import { apiNotFound, authenticatedCaller, requireOrMask, visibleApi } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { ensureIdentity, ensureInlinePermissions, requireRoles } from "../rbac.ts";
import { adding, grantChangePermissions } from "../rbac-changes.ts";
import type { NewKey } from "../store/keys-store.ts";
import { metaObject, validCredits, validExpires, validPermissions, validRatelimits } from "./validation.ts";

const MAX_KEYS = 1000;

/**
 * Imports keys by the SHA-256 of their plaintext, stored as hashKey() stores
 * it, so the existing key strings verify at once. A hash already stored (or
 * repeated in the request) is answered in `failed`; the rest are imported.
 */
export function migrateKeys(deps: KeysDeps) {
  return async (req: MigrateKeysRequest): Promise<MessageInitShape<typeof MigrateKeysResponseSchema>> => {
    const caller = authenticatedCaller(req);
    if (req.migrationId === "" || req.migrationId.length > 256) {
      throw invalidInput("/migrationId", "migrationId must be 1 to 256 characters");
    }
    if (req.apiId === "") throw invalidInput("/apiId", "apiId is required");
    if (req.keys.length === 0 || req.keys.length > MAX_KEYS) {
      throw invalidInput("/keys", `keys must hold 1 to ${MAX_KEYS} keys, got ${req.keys.length}`);
    }
    // As createKey: a root key that may not create keys here learns nothing about the API.
    requireOrMask(caller, [need("api", req.apiId, "create_key")], apiNotFound);
    const api = await visibleApi(deps, caller, req.apiId);
    // Keys imported with roles or permissions are given them: what adding them to a key needs.
    requirePermissions(
      caller,
      grantChangePermissions({
        roles: adding(req.keys.flatMap((k) => k.roles)),
        permissions: adding(req.keys.flatMap((k) => k.permissions)),
      }),
    );
    const now = deps.clock.now();
    const seen = new Set<string>();
    const failed: string[] = [];
    const imports: { given: string; key: NewKey }[] = [];
    // Each role, permission and identity is looked up once for the whole request.
    const roleNames = new Set(
      (await requireRoles(deps, caller, distinct(req.keys.flatMap((k) => k.roles)))).map((r) => r.name),
    );
    for (const [i, k] of req.keys.entries()) {
      const at = `/keys/${i}`;
      const hash = storedHash(k.hash, `${at}/hash`);
      const roles = distinct(k.roles).filter((r) => roleNames.has(r));
      const externalId = k.externalId === undefined || k.externalId === "" ? null : k.externalId;
      const key: NewKey = {
        id: newId("key"),
        workspaceId: caller.workspaceId,
        apiId: api.id,
        hash,
        start: k.start ?? "",
        name: k.name === undefined || k.name === "" ? null : k.name,
        metaJson: metaObject(k.metaJson, `${at}/meta`),
        externalId,
        identityId: null,
        permissions: validPermissions(k.permissions, at),
        roles,
        expires: k.expires === undefined ? null : validExpires(k.expires, `${at}/expires`),
        enabled: k.enabled ?? true,
        ...validCredits(k.credits, `${at}/credits`),
        createdAt: now,
        ratelimits: validRatelimits(k.ratelimits, at).map((r) => ({ ...r, id: newId("rl") })),
        byteLength: null,
      };
      if (seen.has(hash)) failed.push(k.hash);
      else {
        seen.add(hash);
        imports.push({ given: k.hash, key });
      }
    }
    // Side effects only once the whole request is valid.
    await ensureInlinePermissions(deps, caller, distinct(imports.flatMap((i) => i.key.permissions)));
    const identityIds = new Map<string, string>();
    for (const { key } of imports) {
      if (key.externalId === null) continue;
      let id = identityIds.get(key.externalId);
      if (id === undefined) {
        id = (await ensureIdentity(deps, caller, key.externalId)).id;
        identityIds.set(key.externalId, id);
      }
      key.identityId = id;
    }
    const inserted = await deps.store.importKeys(
      imports.map((i) => i.key),
      (keys) =>
        succeeded(
          deps,
          caller,
          "keys.migrateKeys",
          [apiResource(api.id), ...keys.map((k) => keyResource(k.id))],
          ["keys"],
        ),
    );
    for (const [i, { key }] of imports.entries()) {
      if (inserted[i])
        publishDomainEvent(deps, "key.created", caller.workspaceId, { keyId: key.id, apiId: api.id });
    }
    const migrated: { hash: string; keyId: string }[] = [];
    imports.forEach(({ given, key }, i) => {
      if (inserted[i]) migrated.push({ hash: given, keyId: key.id });
      else failed.push(given);
    });
    // Every instance forgets the "no such key" it may have cached for these hashes.
    if (migrated.length > 100) await keyChanged(deps, { workspaceId: caller.workspaceId, apiId: api.id });
    else {
      const sent = imports
        .filter((_, i) => inserted[i])
        .map(({ key }) =>
          keyChanged(deps, {
            workspaceId: caller.workspaceId,
            hash: key.hash,
            keyId: key.id,
            apiId: api.id,
          }),
        );
      await Promise.all(sent);
    }
    return { migrated, failed };
  };
}

/** A SHA-256 given as hex (64 characters) or base64 (standard or url-safe, padded or not), as hashKey() spells it. */
export function storedHash(given: string, location: string): string {
  if (/^[0-9a-fA-F]{64}$/.test(given)) return Buffer.from(given, "hex").toString("base64");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(given)) {
    const bytes = Buffer.from(given, "base64");
    if (bytes.length === 32) return bytes.toString("base64");
  }
  throw invalidInput(
    location,
    "hash must be the SHA-256 of the key, as 64 hex characters or 44 base64 characters",
  );
}

const distinct = (values: readonly string[]) => [...new Set(values)];
