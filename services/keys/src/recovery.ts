import { domainError, ErrorReason } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";
import type { KeyRecord } from "./store/keys-store.ts";
import type { KeyVault } from "./vault.ts";

/** The vault, or PRECONDITION_FAILED when no encryption key is configured. */
export function requireVault(deps: KeysDeps): KeyVault {
  if (!deps.vault) {
    throw domainError(
      ErrorReason.PRECONDITION_FAILED,
      "This API does not support key encryption: no encryption key is configured (LATCHKEY_ENCRYPTION_KEY).",
    );
  }
  return deps.vault;
}

/**
 * The plaintext of a recoverable key, for a reader already allowed decrypt_key;
 * undefined for a key created without recoverable, which can never be recovered.
 */
export async function recoverPlaintext(deps: KeysDeps, key: KeyRecord): Promise<string | undefined> {
  if (!key.recoverable) return undefined;
  const vault = requireVault(deps);
  const sealed = await deps.store.findEncryptedKey(key.id);
  return sealed && vault.open(sealed);
}
