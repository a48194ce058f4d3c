import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DeleteApiRequest, DeleteApiResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, need, requirePermissions, succeeded } from "@latchkey/runtime";
import { apiNotFound, authenticatedCaller, visibleApi } from "../access.ts";
import { apiResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";

export function deleteApi(deps: KeysDeps) {
  return async (req: DeleteApiRequest): Promise<MessageInitShape<typeof DeleteApiResponseSchema>> => {
    const caller = authenticatedCaller(req);
    if (req.apiId === "") throw invalidInput("/apiId", "apiId is required");
    // Checked before the lookup, so a refusal says nothing about whether the API exists.
    requirePermissions(caller, [need("api", req.apiId, "delete_api")]);
    const api = await visibleApi(deps, caller, req.apiId);
    const deleted = await deps.store.deleteApi(
      api.id,
      deps.clock.now(),
      succeeded(deps, caller, "apis.deleteApi", [apiResource(api.id)]),
    );
    // Deleted meanwhile by another request: gone, as for any other missing API.
    if (!deleted) throw apiNotFound();
    // No hash: every instance drops its whole cache, so none of the API's keys verifies again.
    await keyChanged(deps, { workspaceId: caller.workspaceId, apiId: api.id });
    return {};
  };
}
