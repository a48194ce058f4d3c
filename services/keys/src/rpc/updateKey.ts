import type { MessageInitShape } from "@bufbuild/protobuf";
import type { UpdateKeyRequest, UpdateKeyResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, need, newId, requirePermissions, resourcesOf, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { validAllowList } from "../allow-list.ts";
import { apiResource, keyResource } from "../audit.ts";
import { validThresholds } from "../credit-thresholds.ts";
import type { KeysDeps } from "../deps.ts";
import { ensureIdentity, ensureInlinePermissions, requireRoles } from "../rbac.ts";
import { grantChangePermissions, replacing } from "../rbac-changes.ts";
import { dueRefill } from "../refills.ts";
import type { KeyPatch, KeyRatelimitRecord, VerifiableKey } from "../store/keys-store.ts";
import { keyChangeCommitted } from "./key-changed.ts";
import {
  int64,
  metaObject,
  validExpires,
  validPermissions,
  validRatelimits,
  validRefill,
} from "./validation.ts";

/**
 * keys.updateKey: each field omitted is unchanged, given is replaced, named
 * in `cleared` (JSON null) is cleared. See UpdateKeyRequest in keys.proto.
 */
export function updateKey(deps: KeysDeps) {
  return async (req: UpdateKeyRequest): Promise<MessageInitShape<typeof UpdateKeyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const key = await visibleKey(deps, caller, req.keyId);
    requirePermissions(caller, [
      need("api", key.apiId, "update_key"),
      // roles and permissions replace the key's lists, as setRoles and setPermissions do.
      ...grantChangePermissions({
        roles: req.roles && replacing(req.roles.values),
        permissions: req.permissions && replacing(req.permissions.values),
      }),
    ]);
    const patch = validUpdateKey(req, key, deps.clock.now());
    if (patch.roles) patch.roles = (await requireRoles(deps, caller, patch.roles)).map((r) => r.name);
    if (patch.permissions) await ensureInlinePermissions(deps, caller, patch.permissions);
    // An externalId links the key to that identity (created when missing); null unlinks it.
    if (patch.externalId === null) patch.identityId = null;
    else if (patch.externalId !== undefined) {
      const identity = await ensureIdentity(deps, caller, patch.externalId);
      patch.externalId = identity.externalId;
      patch.identityId = identity.id;
    }
    const fields = patchFields(patch);
    const updated = await deps.store.updateKey(
      key.id,
      patch,
      succeeded(
        deps,
        caller,
        "keys.updateKey",
        [
          keyResource(key.id),
          apiResource(key.apiId),
          ...resourcesOf(["identity", patch.identityId ?? undefined]),
        ],
        fields,
      ),
    );
    if (!updated) throw keyNotFound();
    await keyChangeCommitted(deps, caller, key, "key.updated", { fields });
    return {};
  };
}

/** The public names of the fields a patch changes, for the audit record and key.updated (never their values). */
export function patchFields(patch: KeyPatch): string[] {
  const names: [keyof KeyPatch, string][] = [
    ["name", "name"],
    ["metaJson", "meta"],
    ["externalId", "externalId"],
    ["expires", "expires"],
    ["enabled", "enabled"],
    ["remaining", "credits.remaining"],
    ["refill", "credits.refill"],
    ["ratelimits", "ratelimits"],
    ["roles", "roles"],
    ["permissions", "permissions"],
    ["ipAllowList", "ipAllowList"],
    ["creditThresholds", "creditThresholds"],
  ];
  return names.filter(([field]) => patch[field] !== undefined).map(([, name]) => name);
}

/** JSON paths a request may clear (set to null). */
const CLEARABLE = [
  "name",
  "externalId",
  "meta",
  "expires",
  "credits",
  "credits.remaining",
  "credits.refill",
] as const;
type Clearable = (typeof CLEARABLE)[number];

/** The patch the request asks for, checked against the key as it is. */
export function validUpdateKey(req: UpdateKeyRequest, key: VerifiableKey, now: number): KeyPatch {
  const cleared = new Set<Clearable>();
  req.cleared.forEach((path, i) => {
    if (!(CLEARABLE as readonly string[]).includes(path)) {
      throw invalidInput(
        `/cleared/${i}`,
        `'${path}' cannot be null`,
        `Only ${CLEARABLE.join(", ")} may be null; omit a field to leave it unchanged.`,
      );
    }
    cleared.add(path as Clearable);
  });
  const given: Record<Clearable, boolean> = {
    name: req.name !== undefined,
    externalId: req.externalId !== undefined,
    meta: req.metaJson !== undefined,
    expires: req.expires !== undefined,
    credits: req.credits !== undefined,
    "credits.remaining": req.credits?.remaining !== undefined,
    "credits.refill": req.credits?.refill !== undefined,
  };
  for (const path of cleared) {
    if (
      given[path] ||
      (path === "credits" && (cleared.has("credits.remaining") || cleared.has("credits.refill")))
    ) {
      throw invalidInput(`/${path.replace(".", "/")}`, `${path} is both given and null`);
    }
  }

  const patch: KeyPatch = { updatedAt: now };
  if (req.name !== undefined) {
    if (req.name === "") throw invalidInput("/name", "name must not be empty");
    patch.name = req.name;
  } else if (cleared.has("name")) patch.name = null;
  if (req.externalId !== undefined) {
    if (req.externalId === "") throw invalidInput("/externalId", "externalId must not be empty");
    patch.externalId = req.externalId;
  } else if (cleared.has("externalId")) patch.externalId = null;
  if (req.metaJson !== undefined) patch.metaJson = metaObject(req.metaJson, "/meta");
  else if (cleared.has("meta")) patch.metaJson = null;
  if (req.expires !== undefined) patch.expires = validExpires(req.expires, "/expires");
  else if (cleared.has("expires")) patch.expires = null;
  if (req.enabled !== undefined) patch.enabled = req.enabled;

  if (cleared.has("credits") || cleared.has("credits.remaining")) {
    // Unlimited: a refill of nothing means nothing.
    if (req.credits?.refill !== undefined) {
      throw invalidInput(
        "/credits/refill",
        "a refill needs a balance",
        "Give credits.remaining or omit refill.",
      );
    }
    patch.remaining = null;
    patch.refill = null;
  } else {
    if (req.credits?.remaining !== undefined) {
      patch.remaining = int64(req.credits.remaining, "/credits/remaining");
      // A refill due now is settled by this balance, so the next spend does not overwrite it.
      const due = dueRefill(key, now);
      if (due !== null) patch.lastRefillAt = due;
    }
    if (req.credits?.refill !== undefined) {
      if ((patch.remaining ?? key.remaining) === null) {
        throw invalidInput(
          "/credits/remaining",
          "remaining must be set when refill is set on a key with unlimited credits",
          "Give the starting balance in credits.remaining.",
        );
      }
      patch.refill = validRefill(req.credits.refill, "/credits/refill");
      // The new schedule starts now: its first refill is the next instant it names.
      patch.lastRefillAt = now;
    } else if (cleared.has("credits.refill")) patch.refill = null;
  }

  if (req.ratelimits)
    patch.ratelimits = replaceRatelimits(key.ratelimits, validRatelimits(req.ratelimits.ratelimits, ""));
  if (req.ipAllowList) patch.ipAllowList = validAllowList(req.ipAllowList.values, "/ipAllowList");
  if (req.creditThresholds)
    patch.creditThresholds = validThresholds(req.creditThresholds.values, "/creditThresholds");
  if (req.roles) patch.roles = [...new Set(req.roles.values)];
  if (req.permissions) patch.permissions = validPermissions(req.permissions.values, "");
  return patch;
}

/** The new set, matched by name: a name that stays keeps its id, a new name gets one. */
function replaceRatelimits(
  current: readonly KeyRatelimitRecord[],
  wanted: Omit<KeyRatelimitRecord, "id">[],
): KeyRatelimitRecord[] {
  const idByName = new Map(current.map((r) => [r.name, r.id]));
  return wanted.map((r) => ({ ...r, id: idByName.get(r.name) ?? newId("rl") }));
}
