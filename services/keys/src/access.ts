import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { domainError, ErrorReason, holdsAll } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";
import type { ApiRecord, VerifiableKey } from "./store/keys-store.ts";

/**
 * Who may see what. Nothing crosses workspaces: a resource of another
 * workspace, a deleted one and a missing one all get the same NOT_FOUND, from
 * the helpers below and nowhere else.
 */

export { authenticatedCaller } from "@latchkey/runtime";

export const apiNotFound = () => domainError(ErrorReason.API_NOT_FOUND, "The specified API was not found.");
export const keyNotFound = () => domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");

export function apiIsVisible(caller: Caller, api: ApiRecord | undefined): api is ApiRecord {
  return api !== undefined && api.workspaceId === caller.workspaceId && api.deletedAt === null;
}

export function keyIsVisible<K extends Pick<VerifiableKey, "workspaceId" | "deletedAt" | "apiDeleted">>(
  caller: Caller,
  key: K | null | undefined,
): key is K {
  return (
    key !== undefined &&
    key !== null &&
    key.workspaceId === caller.workspaceId &&
    key.deletedAt === null &&
    !key.apiDeleted
  );
}

/** The caller's API, or API_NOT_FOUND. */
export async function visibleApi(deps: KeysDeps, caller: Caller, apiId: string): Promise<ApiRecord> {
  const api = await deps.store.findApi(apiId);
  if (!apiIsVisible(caller, api)) throw apiNotFound();
  return api;
}

/** The caller's key, or KEY_NOT_FOUND. */
export async function visibleKey(deps: KeysDeps, caller: Caller, keyId: string): Promise<VerifiableKey> {
  const key = await deps.store.findKeyById(keyId);
  if (!keyIsVisible(caller, key)) throw keyNotFound();
  return key;
}

/** For operations where Unkey masks a missing permission as absence (createKey, verifyKey, whoami). */
export function requireOrMask(caller: Caller, wanted: readonly string[], masked: () => Error): void {
  if (!holdsAll(caller.permissions, wanted)) throw masked();
}
