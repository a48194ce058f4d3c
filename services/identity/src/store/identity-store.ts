import type { AuditLogStore, AuditRecord } from "@latchkey/runtime";

/**
 * Identities, permissions and roles of every workspace. Every method is
 * confined to one workspace: a record of another workspace is never found,
 * changed or deleted. Ids are chosen by the caller (newId), never by the store.
 */

export interface RatelimitRecord {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

export interface IdentityRecord {
  id: string;
  workspaceId: string;
  externalId: string;
  /** JSON object text, or null when none was given. */
  meta: string | null;
  /** Ordered by name. */
  ratelimits: RatelimitRecord[];
  /** CIDRs or addresses the identity's keys may be verified from, in the order given; empty allows any. */
  ipAllowList: string[];
  createdAt: number;
  updatedAt: number;
}

export interface PermissionRecord {
  id: string;
  workspaceId: string;
  name: string;
  slug: string;
  description: string | null;
  createdAt: number;
}

export interface RoleRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  createdAt: number;
  /** Ordered by slug. */
  permissions: PermissionRecord[];
}

/** One page of a list, ordered by id (byte order), starting after `after`. */
export interface PageQuery {
  limit: number;
  after?: string;
  /** Case-insensitive substring; the fields it looks in depend on the list. */
  search?: string;
}

export interface IdentityUpdate {
  /** Replaces the meta when present. */
  meta?: string | null;
  /** Replaces the set when present; a limit whose name was already there keeps its id. */
  ratelimits?: RatelimitRecord[];
  /** Replaces the IP allow-list when present. */
  ipAllowList?: string[];
  updatedAt: number;
}

/**
 * A mutation a management operation makes takes its audit record (`audit`) and writes it in the
 * change's own transaction, only when the change is made (packages/runtime/src/audit.ts).
 */
export interface IdentityStore extends AuditLogStore {
  /** Inserts the identity with its limits, unless its externalId is taken: then answers the existing one. */
  insertIdentity(
    identity: IdentityRecord,
    audit?: AuditRecord,
  ): Promise<{ created: boolean; identity: IdentityRecord }>;
  /** By id, else by externalId. */
  findIdentity(workspaceId: string, idOrExternalId: string): Promise<IdentityRecord | undefined>;
  /** Those of `ids` that exist, in no particular order. */
  findIdentitiesByIds(workspaceId: string, ids: readonly string[]): Promise<IdentityRecord[]>;
  /** Search looks in the id and the externalId. */
  listIdentities(workspaceId: string, page: PageQuery): Promise<IdentityRecord[]>;
  updateIdentity(
    workspaceId: string,
    id: string,
    update: IdentityUpdate,
    audit?: AuditRecord,
  ): Promise<IdentityRecord | undefined>;
  /** Deletes it and its limits for good; false when there was none. */
  deleteIdentity(workspaceId: string, id: string, audit?: AuditRecord): Promise<boolean>;

  /** False when the slug is taken. */
  insertPermission(permission: PermissionRecord, audit?: AuditRecord): Promise<boolean>;
  /** By id, else by slug. */
  findPermission(workspaceId: string, idOrSlug: string): Promise<PermissionRecord | undefined>;
  /** Those of `slugs` that exist, in no particular order. */
  findPermissionsBySlugs(workspaceId: string, slugs: readonly string[]): Promise<PermissionRecord[]>;
  /** For each candidate, the permission with its slug: the existing one, else the candidate, inserted. In candidate order. */
  ensurePermissions(
    workspaceId: string,
    candidates: readonly PermissionRecord[],
  ): Promise<PermissionRecord[]>;
  /** Search looks in the id, name, slug and description. */
  listPermissions(workspaceId: string, page: PageQuery): Promise<PermissionRecord[]>;
  /** Deletes it and takes it out of every role; false when there was none. */
  deletePermission(workspaceId: string, id: string, audit?: AuditRecord): Promise<boolean>;

  /**
   * Inserts the role holding `permissions` (ensured as by ensurePermissions),
   * all or nothing; undefined when the name is taken.
   */
  insertRole(
    role: Omit<RoleRecord, "permissions">,
    permissions: readonly PermissionRecord[],
    audit?: AuditRecord,
  ): Promise<RoleRecord | undefined>;
  /** By id, else by name. */
  findRole(workspaceId: string, idOrName: string): Promise<RoleRecord | undefined>;
  /** Those of `names` that exist, in no particular order. */
  findRolesByNames(workspaceId: string, names: readonly string[]): Promise<RoleRecord[]>;
  /** Search looks in the id, name and description. */
  listRoles(workspaceId: string, page: PageQuery): Promise<RoleRecord[]>;
  /**
   * Replaces the role's permissions with `permissions` (ensured as by
   * ensurePermissions), atomically; answers them ordered by slug, or undefined
   * when there is no such role.
   */
  setRolePermissions(
    workspaceId: string,
    roleId: string,
    permissions: readonly PermissionRecord[],
    audit?: AuditRecord,
  ): Promise<PermissionRecord[] | undefined>;
  /** False when there was none. */
  deleteRole(workspaceId: string, id: string, audit?: AuditRecord): Promise<boolean>;
}

/** Byte-order comparison, the order of ids in pages and of slugs in roles. */
export const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Case-insensitive substring test of list searches. */
export const matchesSearch = (search: string | undefined, ...fields: (string | null)[]) => {
  if (!search) return true;
  const s = search.toLowerCase();
  return fields.some((f) => f?.toLowerCase().includes(s));
};
