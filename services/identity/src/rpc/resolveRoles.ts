import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ResolveRolesRequest,
  ResolveRolesResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { distinctOf } from "../validation.ts";
import { roleView } from "../views.ts";

/**
 * For keys.addRoles/setRoles (which answer 404 naming a missing role) and for
 * verification. No root-key permission of its own: the keys service checked
 * the key operation.
 */
export function resolveRoles(deps: IdentityDeps) {
  return async (req: ResolveRolesRequest): Promise<MessageInitShape<typeof ResolveRolesResponseSchema>> => {
    const names = distinctOf(req.names, "/roles");
    const caller = authenticatedCaller(req);
    const byName = new Map(
      (await deps.store.findRolesByNames(caller.workspaceId, names)).map((r) => [r.name, r]),
    );
    return {
      roles: names.flatMap((n) => {
        const role = byName.get(n);
        return role ? [roleView(role)] : [];
      }),
      missing: names.filter((n) => !byName.has(n)),
    };
  };
}
