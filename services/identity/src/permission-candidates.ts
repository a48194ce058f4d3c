import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { domainError, ErrorReason, holds, newId } from "@latchkey/runtime";
import type { IdentityDeps } from "./deps.ts";
import { identityChanged } from "./events.ts";
import type { PermissionRecord } from "./store/identity-store.ts";

export const CREATE_PERMISSION = "rbac.*.create_permission";

export interface PermissionCandidates {
  /** One record per slug, in order: the existing permission, else a fresh one for the store to insert. */
  candidates: PermissionRecord[];
  /** Slugs that name no permission yet. */
  missing: string[];
}

/** What `slugs` name now, with fresh records (name = slug) standing in for the missing ones. */
export async function permissionCandidates(
  deps: IdentityDeps,
  caller: Caller,
  slugs: readonly string[],
): Promise<PermissionCandidates> {
  const existing = new Map(
    (await deps.store.findPermissionsBySlugs(caller.workspaceId, slugs)).map((p) => [p.slug, p]),
  );
  const now = deps.clock.now();
  const missing = slugs.filter((s) => !existing.has(s));
  const candidates = slugs.map(
    (slug) =>
      existing.get(slug) ?? {
        id: newId("perm"),
        workspaceId: caller.workspaceId,
        name: slug,
        slug,
        description: null,
        createdAt: now,
      },
  );
  return { candidates, missing };
}

/** Creating a missing permission on the fly needs rbac.*.create_permission: the refusal names it and the slug. */
export function requireCreatePermission(caller: Caller, missing: readonly string[]): void {
  if (missing.length === 0 || holds(caller.permissions, CREATE_PERMISSION)) return;
  const which = missing.map((s) => `'${s}'`).join(", ");
  throw domainError(
    ErrorReason.INSUFFICIENT_PERMISSIONS,
    `The permission${missing.length > 1 ? "s" : ""} ${which} ${missing.length > 1 ? "do" : "does"} not exist, and creating ${missing.length > 1 ? "them" : "it"} needs the permission '${CREATE_PERMISSION}', which the root key lacks.`,
  );
}

/** Announces the permissions the store inserted from fresh candidates (ids it did not have before). */
export async function announceCreated(
  deps: IdentityDeps,
  before: PermissionCandidates,
  ensured: readonly PermissionRecord[],
): Promise<void> {
  if (before.missing.length === 0) return;
  const missing = new Set(before.missing);
  const fresh = new Set(before.candidates.filter((c) => missing.has(c.slug)).map((c) => c.id));
  const sent = ensured
    .filter((p) => fresh.has(p.id))
    .map((p) =>
      identityChanged(deps, { workspaceId: p.workspaceId, permissionId: p.id, permissionSlug: p.slug }),
    );
  await Promise.all(sent);
}
