import { create, toBinary } from "@bufbuild/protobuf";
import { IdentityChangedSchema } from "@latchkey/proto/identity/v1/events_pb";
import { IDENTITY_CHANGED } from "@latchkey/runtime";
import type { IdentityDeps } from "./deps.ts";

/** Every event the identity context emits, one function each. */

export interface IdentityChange {
  workspaceId: string;
  identityId?: string;
  externalId?: string;
  roleId?: string;
  roleName?: string;
  permissionId?: string;
  permissionSlug?: string;
  /** The identity, role or permission named was deleted: consumers holding its name drop it. */
  deleted?: boolean;
}

/**
 * An identity, a role or a permission was created, changed or deleted: every
 * instance caching it (the keys service, for verification) drops it before
 * its next use.
 */
export function identityChanged(deps: Pick<IdentityDeps, "bus">, change: IdentityChange): Promise<void> {
  deps.bus.publish(
    IDENTITY_CHANGED,
    toBinary(
      IdentityChangedSchema,
      create(IdentityChangedSchema, {
        workspaceId: change.workspaceId,
        identityId: change.identityId ?? "",
        externalId: change.externalId ?? "",
        roleId: change.roleId ?? "",
        roleName: change.roleName ?? "",
        permissionId: change.permissionId ?? "",
        permissionSlug: change.permissionSlug ?? "",
        deleted: change.deleted ?? false,
      }),
    ),
  );
  // The caller answers only once the message is on its way to every instance (Bus.flushed).
  return deps.bus.flushed();
}
