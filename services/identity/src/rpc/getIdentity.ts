import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetIdentityRequest, GetIdentityResponseSchema } from "@latchkey/proto/identity/v1/identity_pb";
import { authenticatedCaller, readableIdentity } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { referenceOf } from "../validation.ts";
import { identityView } from "../views.ts";

export function getIdentity(deps: IdentityDeps) {
  return async (req: GetIdentityRequest): Promise<MessageInitShape<typeof GetIdentityResponseSchema>> => {
    const ref = referenceOf(req.identity, "/identity");
    const caller = authenticatedCaller(req);
    const identity = await readableIdentity(deps, caller, ref);
    return { identity: identityView(identity) };
  };
}
