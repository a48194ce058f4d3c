import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateApiRequest, CreateApiResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, newId, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import { apiResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";

export function createApi(deps: KeysDeps) {
  return async (req: CreateApiRequest): Promise<MessageInitShape<typeof CreateApiResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["api.*.create_api"]);
    const input = validCreateApi(req);
    const apiId = newId("api");
    await deps.store.createApi(
      {
        id: apiId,
        workspaceId: caller.workspaceId,
        name: input.name,
        createdAt: deps.clock.now(),
      },
      succeeded(deps, caller, "apis.createApi", [apiResource(apiId)], ["name"]),
    );
    return { apiId };
  };
}

function validCreateApi(req: CreateApiRequest): { name: string } {
  if (req.name.trim() === "") throw invalidInput("/name", "name must not be empty", "Give the API a name.");
  return { name: req.name };
}
