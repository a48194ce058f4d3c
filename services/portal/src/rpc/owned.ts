import type { Key } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { type LiveSession, sessionCaller } from "../session.ts";
import { keyNotFound } from "../validation.ts";

/**
 * The key `keyId` when it is the session's end user's: in the portal's API and linked to the
 * session's externalId. Missing, another API's or another user's all answer the same 404, so a
 * session learns nothing of keys that are not its own. This is where the identity restriction
 * holds: the keys service judges the API (the caller holds permissions on it alone), this the owner.
 */
export async function ownedKey(deps: PortalDeps, s: LiveSession, keyId: string): Promise<Key> {
  let key: Key | undefined;
  try {
    key = (await deps.keys.getKey({ caller: sessionCaller(s, ["read_key"]), keyId })).key;
  } catch (err) {
    const reason = errorDetailOf(err)?.reason;
    if (
      reason === ErrorReason.KEY_NOT_FOUND ||
      reason === ErrorReason.INSUFFICIENT_PERMISSIONS ||
      reason === ErrorReason.API_NOT_FOUND ||
      reason === ErrorReason.INVALID_INPUT
    ) {
      throw keyNotFound(keyId);
    }
    throw err;
  }
  if (!key || key.apiId !== s.portal.apiId || key.identity?.externalId !== s.session.externalId) {
    throw keyNotFound(keyId);
  }
  return key;
}
