import type { MessageInitShape } from "@bufbuild/protobuf";
import type { IdentitySchema, PermissionSchema, RoleSchema } from "@latchkey/proto/identity/v1/identity_pb";
import type { IdentityRecord, PermissionRecord, RoleRecord } from "./store/identity-store.ts";

/** Store records as the proto messages answer them. */

export function identityView(i: IdentityRecord): MessageInitShape<typeof IdentitySchema> {
  return {
    id: i.id,
    externalId: i.externalId,
    ...(i.meta !== null ? { metaJson: i.meta } : {}),
    ratelimits: i.ratelimits.map((r) => ({
      id: r.id,
      name: r.name,
      limit: BigInt(r.limit),
      duration: BigInt(r.duration),
      autoApply: r.autoApply,
    })),
    ipAllowList: i.ipAllowList,
    createdAt: BigInt(i.createdAt),
    updatedAt: BigInt(i.updatedAt),
  };
}

export function permissionView(p: PermissionRecord): MessageInitShape<typeof PermissionSchema> {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    ...(p.description !== null ? { description: p.description } : {}),
    createdAt: BigInt(p.createdAt),
  };
}

export function roleView(r: RoleRecord): MessageInitShape<typeof RoleSchema> {
  return {
    id: r.id,
    name: r.name,
    ...(r.description !== null ? { description: r.description } : {}),
    permissions: r.permissions.map(permissionView),
    createdAt: BigInt(r.createdAt),
  };
}
