import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateApiRequest, CreateApiResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, newId, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import { validAllowList } from "../allow-list.ts";
import { apiResource } from "../audit.ts";
import { validThresholds } from "../credit-thresholds.ts";
import type { KeysDeps } from "../deps.ts";
import { KEY_FORMATS, type KeyFormat } from "../leaks/key-format.ts";
import { DEFAULT_EXPIRING_DAYS } from "../notices/expiring.ts";
import type { LeakPolicy } from "../store/keys-store.ts";

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
        keyFormat: input.keyFormat,
        leakPolicy: input.leakPolicy,
        ipAllowList: validAllowList(req.ipAllowList, "/ipAllowList"),
        expiringNoticeDays: validDays(req.expiringNoticeDays),
        creditThresholds: validThresholds(req.creditThresholds, "/creditThresholds"),
      },
      succeeded(
        deps,
        caller,
        "apis.createApi",
        [apiResource(apiId)],
        [
          "name",
          ...(req.keyFormat === undefined ? [] : ["keyFormat"]),
          ...(req.leakPolicy === undefined ? [] : ["leakPolicy"]),
          ...(req.ipAllowList.length === 0 ? [] : ["ipAllowList"]),
          ...(req.expiringNoticeDays === undefined ? [] : ["expiringNoticeDays"]),
          ...(req.creditThresholds.length === 0 ? [] : ["creditThresholds"]),
        ],
      ),
    );
    return { apiId };
  };
}

/** 0 to 365 days; unset: 7 (notices/expiring.ts). */
export function validDays(days: number | undefined): number {
  if (days === undefined) return DEFAULT_EXPIRING_DAYS;
  if (!Number.isInteger(days) || days < 0 || days > 365) {
    throw invalidInput("/expiringNoticeDays", "expiringNoticeDays must be 0 to 365");
  }
  return days;
}

export const LEAK_POLICIES: readonly LeakPolicy[] = ["revoke", "flag"];

function validCreateApi(req: CreateApiRequest): {
  name: string;
  keyFormat: KeyFormat;
  leakPolicy: LeakPolicy;
} {
  if (req.name.trim() === "") throw invalidInput("/name", "name must not be empty", "Give the API a name.");
  const keyFormat = (req.keyFormat ?? "plain") as KeyFormat;
  if (!KEY_FORMATS.includes(keyFormat))
    throw invalidInput("/keyFormat", "keyFormat must be plain or checksum");
  const leakPolicy = (req.leakPolicy ?? "revoke") as LeakPolicy;
  if (!LEAK_POLICIES.includes(leakPolicy))
    throw invalidInput("/leakPolicy", "leakPolicy must be revoke or flag");
  return { name: req.name, keyFormat, leakPolicy };
}
