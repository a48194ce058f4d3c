import type { MessageInitShape } from "@bufbuild/protobuf";
import type { UpdateApiRequest, UpdateApiResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, need, requirePermissions, succeeded } from "@latchkey/runtime";
import { apiNotFound, authenticatedCaller, visibleApi } from "../access.ts";
import { validAllowList } from "../allow-list.ts";
import { apiResource } from "../audit.ts";
import { validThresholds } from "../credit-thresholds.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import { KEY_FORMATS, type KeyFormat } from "../leaks/key-format.ts";
import type { ApiPatch, LeakPolicy } from "../store/keys-store.ts";
import { LEAK_POLICIES, validDays } from "./createApi.ts";
import { apiView } from "./getApi.ts";

/**
 * apis.updateApi (Latchkey's addition): the settings createApi takes, changed afterwards. A new keyFormat
 * shapes the keys created from then on; keys made before keep verifying, whatever their format. New
 * creditThresholds apply at once to every key without thresholds of its own.
 */
export function updateApi(deps: KeysDeps) {
  return async (req: UpdateApiRequest): Promise<MessageInitShape<typeof UpdateApiResponseSchema>> => {
    const caller = authenticatedCaller(req);
    if (req.apiId === "") throw invalidInput("/apiId", "apiId is required");
    // Checked before the lookup, so a refusal says nothing about whether the API exists.
    requirePermissions(caller, [need("api", req.apiId, "update_api")]);
    const patch = validPatch(req);
    const api = await visibleApi(deps, caller, req.apiId);
    const updated = await deps.store.updateApi(
      api.id,
      patch,
      succeeded(deps, caller, "apis.updateApi", [apiResource(api.id)], Object.keys(patch)),
    );
    // Deleted meanwhile by another request: gone, as for any other missing API.
    if (!updated) throw apiNotFound();
    // Cached keys carry their API's allow-list and the credit thresholds in effect (their own, else the
    // API's): every instance drops the workspace's keys, as deleteApi does.
    if (patch.ipAllowList !== undefined || patch.creditThresholds !== undefined)
      await keyChanged(deps, { workspaceId: caller.workspaceId, apiId: api.id });
    return { api: apiView(updated) };
  };
}

function validPatch(req: UpdateApiRequest): ApiPatch {
  const patch: ApiPatch = {};
  if (req.name !== undefined) {
    if (req.name.trim() === "") throw invalidInput("/name", "name must not be empty", "Give the API a name.");
    patch.name = req.name;
  }
  if (req.keyFormat !== undefined) {
    if (!KEY_FORMATS.includes(req.keyFormat as KeyFormat))
      throw invalidInput("/keyFormat", "keyFormat must be plain or checksum");
    patch.keyFormat = req.keyFormat as KeyFormat;
  }
  if (req.leakPolicy !== undefined) {
    if (!LEAK_POLICIES.includes(req.leakPolicy as LeakPolicy))
      throw invalidInput("/leakPolicy", "leakPolicy must be revoke or flag");
    patch.leakPolicy = req.leakPolicy as LeakPolicy;
  }
  if (req.ipAllowList !== undefined)
    patch.ipAllowList = validAllowList(req.ipAllowList.values, "/ipAllowList");
  if (req.expiringNoticeDays !== undefined) patch.expiringNoticeDays = validDays(req.expiringNoticeDays);
  // The bounds createApi keeps; an empty list returns the API's keys to CREDITS_LOW_FRACTION (null).
  if (req.creditThresholds !== undefined)
    patch.creditThresholds = validThresholds(req.creditThresholds.values, "/creditThresholds");
  if (Object.keys(patch).length === 0) {
    throw invalidInput(
      "/",
      "nothing to update",
      "Give at least one of name, ipAllowList, keyFormat, leakPolicy, expiringNoticeDays, creditThresholds.",
    );
  }
  return patch;
}
