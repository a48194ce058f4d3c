import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ResolvePermissionsRequest,
  ResolvePermissionsResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { announceCreated, permissionCandidates, requireCreatePermission } from "../permission-candidates.ts";
import { slugsOf } from "../validation.ts";
import { permissionView } from "../views.ts";

/**
 * For keys.addPermissions and keys.setPermissions: the permissions the slugs
 * name, creating the missing ones when asked, which needs
 * rbac.*.create_permission. The key permissions themselves (update_key,
 * add_permission_to_key, ...) are the keys service's to check.
 */
export function resolvePermissions(deps: IdentityDeps) {
  return async (
    req: ResolvePermissionsRequest,
  ): Promise<MessageInitShape<typeof ResolvePermissionsResponseSchema>> => {
    const slugs = slugsOf(req.slugs);
    const caller = authenticatedCaller(req);
    const wanted = await permissionCandidates(deps, caller, slugs);
    if (!req.createMissing || wanted.missing.length === 0) {
      const missing = new Set(wanted.missing);
      return {
        permissions: wanted.candidates.filter((c) => !missing.has(c.slug)).map(permissionView),
        missing: wanted.missing,
      };
    }
    requireCreatePermission(caller, wanted.missing);
    const ensured = await deps.store.ensurePermissions(caller.workspaceId, wanted.candidates);
    await announceCreated(deps, wanted, ensured);
    return { permissions: ensured.map(permissionView), missing: [] };
  };
}
