import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  GetIdentitiesRequest,
  GetIdentitiesResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { distinctOf } from "../validation.ts";
import { identityView } from "../views.ts";

/** For verification: no root-key permission of its own (the keys service checked verify_key). */
export function getIdentities(deps: IdentityDeps) {
  return async (req: GetIdentitiesRequest): Promise<MessageInitShape<typeof GetIdentitiesResponseSchema>> => {
    const ids = distinctOf(req.identityIds, "/identityIds");
    const caller = authenticatedCaller(req);
    const found = await deps.store.findIdentitiesByIds(caller.workspaceId, ids);
    return { identities: found.map(identityView) };
  };
}
