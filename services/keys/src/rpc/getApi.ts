import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ApiSchema, GetApiRequest, GetApiResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller, visibleApi } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import type { ApiRecord } from "../store/keys-store.ts";

export function getApi(deps: KeysDeps) {
  return async (req: GetApiRequest): Promise<MessageInitShape<typeof GetApiResponseSchema>> => {
    const caller = authenticatedCaller(req);
    // Checked before the lookup, so a refusal says nothing about whether the API exists.
    requirePermissions(caller, [need("api", req.apiId, "read_api")]);
    const api = await visibleApi(deps, caller, req.apiId);
    return { api: apiView(api), holdsRecoverableKeys: await deps.store.holdsRecoverableKeys(api.id) };
  };
}

/** An API as getApi and updateApi answer it, its defaults filled in. */
export function apiView(api: ApiRecord): MessageInitShape<typeof ApiSchema> {
  return {
    id: api.id,
    name: api.name,
    createdAt: BigInt(api.createdAt),
    keyFormat: api.keyFormat ?? "plain",
    leakPolicy: api.leakPolicy ?? "revoke",
    ipAllowList: api.ipAllowList ?? [],
    expiringNoticeDays: api.expiringNoticeDays ?? 7,
    creditThresholds: api.creditThresholds ?? [],
  };
}
