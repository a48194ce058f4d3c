import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import type { Identity, Permission, Role } from "@latchkey/proto/identity/v1/identity_pb";
import type { KeyIdentitySchema, KeyPermissionSchema, KeyRoleSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";

/**
 * A key's identity, roles and permissions live in the identity service; the
 * key keeps the identity's id, its role names and its direct permission slugs
 * (what verification reads). These helpers are the only way the keys service
 * asks the identity service about them. The identity service checks no
 * root-key permission of its own for these lookups: the caller's key operation
 * was authorized here before.
 */

const CREATE_PERMISSION = "rbac.*.create_permission";

/** The identity with this externalId, created when the workspace has none. */
export async function ensureIdentity(deps: KeysDeps, caller: Caller, externalId: string): Promise<Identity> {
  const { identity } = await deps.identity.ensureIdentity({ caller, externalId });
  if (!identity) throw new Error("EnsureIdentity answered no identity");
  return identity;
}

/** The identities these ids name, by id; deleted ones are absent (their keys keep working without them). */
export async function identitiesById(
  deps: KeysDeps,
  caller: Caller,
  ids: readonly (string | null)[],
): Promise<Map<string, Identity>> {
  const identityIds = [...new Set(ids.filter((id): id is string => id !== null))];
  if (identityIds.length === 0) return new Map();
  const { identities } = await deps.identity.getIdentities({ caller, identityIds });
  return new Map(identities.map((i) => [i.id, i]));
}

/**
 * The roles `names` name, each once, in the order named. Roles are never
 * created on the fly: a name that names no role answers ROLE_NOT_FOUND naming it.
 */
export async function requireRoles(
  deps: KeysDeps,
  caller: Caller,
  names: readonly string[],
): Promise<Role[]> {
  if (names.length === 0) return [];
  const { roles, missing } = await deps.identity.resolveRoles({ caller, names: [...names] });
  const [first] = missing;
  if (first !== undefined) throw domainError(ErrorReason.ROLE_NOT_FOUND, `Role '${first}' was not found.`);
  return roles;
}

/** The roles of these names that still exist, in the order named (a deleted role is left out). */
export async function existingRoles(
  deps: KeysDeps,
  caller: Caller,
  names: readonly string[],
): Promise<Role[]> {
  if (names.length === 0) return [];
  return (await deps.identity.resolveRoles({ caller, names: [...names] })).roles;
}

/**
 * Makes sure a permission exists for every slug. Missing ones are created
 * (name = slug) only when the caller holds rbac.*.create_permission, else the
 * identity service answers INSUFFICIENT_PERMISSIONS naming it.
 */
export async function ensurePermissions(
  deps: KeysDeps,
  caller: Caller,
  slugs: readonly string[],
): Promise<Permission[]> {
  if (slugs.length === 0) return [];
  return (await deps.identity.resolvePermissions({ caller, slugs: [...slugs], createMissing: true }))
    .permissions;
}

/**
 * createKey, updateKey and migrateKeys create the permission slugs they name
 * without rbac.*.create_permission, as Unkey does: the caller was
 * authorized for giving the key those permissions (rbac-changes.ts).
 */
export async function ensureInlinePermissions(
  deps: KeysDeps,
  caller: Caller,
  slugs: readonly string[],
): Promise<void> {
  if (slugs.length === 0) return;
  await ensurePermissions(deps, withPermission(caller, CREATE_PERMISSION), slugs);
}

function withPermission(caller: Caller, permission: string): Caller {
  return create(CallerSchema, { ...caller, permissions: [...caller.permissions, permission] });
}

/** The permissions these slugs name, ordered by slug; a slug whose permission was deleted is left out. */
export async function permissionsView(
  deps: KeysDeps,
  caller: Caller,
  slugs: readonly string[],
): Promise<MessageInitShape<typeof KeyPermissionSchema>[]> {
  if (slugs.length === 0) return [];
  const { permissions } = await deps.identity.resolvePermissions({
    caller,
    slugs: [...slugs],
    createMissing: false,
  });
  return permissions.sort((a, b) => compare(a.slug, b.slug)).map(permissionView);
}

/** The roles these names name, ordered by name; a role deleted since is left out. */
export async function rolesView(
  deps: KeysDeps,
  caller: Caller,
  names: readonly string[],
): Promise<MessageInitShape<typeof KeyRoleSchema>[]> {
  const roles = await existingRoles(deps, caller, names);
  return roles
    .sort((a, b) => compare(a.name, b.name))
    .map((r) => ({
      id: r.id,
      name: r.name,
      ...(r.description !== undefined && { description: r.description }),
      permissions: r.permissions.map(permissionView),
    }));
}

export function identityView(identity: Identity): MessageInitShape<typeof KeyIdentitySchema> {
  return {
    id: identity.id,
    externalId: identity.externalId,
    ...(identity.metaJson !== undefined && { metaJson: identity.metaJson }),
    ratelimits: identity.ratelimits,
  };
}

function permissionView(p: Permission): MessageInitShape<typeof KeyPermissionSchema> {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    ...(p.description !== undefined && { description: p.description }),
  };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
