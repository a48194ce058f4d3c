import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  CreateIdentityRequest,
  CreateIdentityResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import {
  domainError,
  ErrorReason,
  newId,
  publishDomainEvent,
  requirePermissions,
  succeeded,
} from "@latchkey/runtime";
import { validAllowList } from "@latchkey/runtime/allow-list";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { externalIdOf, metaOf, ratelimitsOf } from "../validation.ts";

export function createIdentity(deps: IdentityDeps) {
  return async (
    req: CreateIdentityRequest,
  ): Promise<MessageInitShape<typeof CreateIdentityResponseSchema>> => {
    const input = validCreateIdentity(req);
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["identity.*.create_identity"]);
    const now = deps.clock.now();
    const id = newId("id");
    const { created, identity } = await deps.store.insertIdentity(
      {
        id,
        workspaceId: caller.workspaceId,
        externalId: input.externalId,
        meta: input.meta,
        ratelimits: input.ratelimits,
        ipAllowList: input.ipAllowList,
        createdAt: now,
        updatedAt: now,
      },
      succeeded(
        deps,
        caller,
        "identities.createIdentity",
        [{ type: "identity", id }],
        [
          "externalId",
          ...(req.metaJson !== undefined ? ["meta"] : []),
          ...(req.ratelimits.length > 0 ? ["ratelimits"] : []),
          ...(req.ipAllowList.length > 0 ? ["ipAllowList"] : []),
        ],
      ),
    );
    if (!created) {
      throw domainError(
        ErrorReason.IDENTITY_ALREADY_EXISTS,
        `An identity with externalId '${input.externalId}' already exists in this workspace.`,
      );
    }
    publishDomainEvent(deps, "identity.created", caller.workspaceId, {
      identityId: identity.id,
      externalId: identity.externalId,
    });
    await identityChanged(deps, {
      workspaceId: caller.workspaceId,
      identityId: identity.id,
      externalId: identity.externalId,
    });
    return { identityId: identity.id };
  };
}

function validCreateIdentity(req: CreateIdentityRequest) {
  return {
    externalId: externalIdOf(req.externalId),
    meta: req.metaJson === undefined ? null : metaOf(req.metaJson),
    ratelimits: ratelimitsOf(req.ratelimits),
    ipAllowList: validAllowList(req.ipAllowList, "/ipAllowList"),
  };
}
