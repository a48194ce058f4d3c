import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateRoleRequest, CreateRoleResponseSchema } from "@latchkey/proto/identity/v1/identity_pb";
import { domainError, ErrorReason, newId, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { announceCreated, permissionCandidates, requireCreatePermission } from "../permission-candidates.ts";
import { descriptionOf, nameOf, slugsOf } from "../validation.ts";

/** Creates the role with its permissions, all or nothing; missing slugs are created when the caller may. */
export function createRole(deps: IdentityDeps) {
  return async (req: CreateRoleRequest): Promise<MessageInitShape<typeof CreateRoleResponseSchema>> => {
    const input = {
      name: nameOf(req.name, "/name", 128),
      description: descriptionOf(req.description),
      slugs: slugsOf(req.permissions),
    };
    const caller = authenticatedCaller(req);
    requirePermissions(caller, [
      "rbac.*.create_role",
      ...(input.slugs.length > 0 ? ["rbac.*.add_permission_to_role"] : []),
    ]);
    const wanted = await permissionCandidates(deps, caller, input.slugs);
    requireCreatePermission(caller, wanted.missing);
    const roleId = newId("role");
    const role = await deps.store.insertRole(
      {
        id: roleId,
        workspaceId: caller.workspaceId,
        name: input.name,
        description: input.description,
        createdAt: deps.clock.now(),
      },
      wanted.candidates,
      succeeded(
        deps,
        caller,
        "permissions.createRole",
        [{ type: "role", id: roleId }],
        [
          "name",
          ...(input.description !== null ? ["description"] : []),
          ...(input.slugs.length > 0 ? ["permissions"] : []),
        ],
      ),
    );
    if (!role) {
      throw domainError(
        ErrorReason.ROLE_ALREADY_EXISTS,
        `A role named '${input.name}' already exists in this workspace.`,
      );
    }
    await announceCreated(deps, wanted, role.permissions);
    await identityChanged(deps, { workspaceId: caller.workspaceId, roleId: role.id, roleName: role.name });
    return { roleId: role.id };
  };
}
