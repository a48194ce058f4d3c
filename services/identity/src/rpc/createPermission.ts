import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  CreatePermissionRequest,
  CreatePermissionResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { domainError, ErrorReason, newId, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { descriptionOf, nameOf, slugOf } from "../validation.ts";

export function createPermission(deps: IdentityDeps) {
  return async (
    req: CreatePermissionRequest,
  ): Promise<MessageInitShape<typeof CreatePermissionResponseSchema>> => {
    const input = {
      name: nameOf(req.name, "/name", 512),
      slug: slugOf(req.slug, "/slug"),
      description: descriptionOf(req.description),
    };
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.create_permission"]);
    const id = newId("perm");
    const created = await deps.store.insertPermission(
      { id, workspaceId: caller.workspaceId, ...input, createdAt: deps.clock.now() },
      succeeded(
        deps,
        caller,
        "permissions.createPermission",
        [{ type: "permission", id }],
        ["name", "slug", ...(input.description !== null ? ["description"] : [])],
      ),
    );
    if (!created) {
      throw domainError(
        ErrorReason.PERMISSION_ALREADY_EXISTS,
        `A permission with slug '${input.slug}' already exists in this workspace.`,
      );
    }
    await identityChanged(deps, {
      workspaceId: caller.workspaceId,
      permissionId: id,
      permissionSlug: input.slug,
    });
    return { permissionId: id };
  };
}
