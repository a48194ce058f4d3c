import { Sealer } from "@latchkey/runtime";
import type { EncryptedKeyRecord } from "./store/keys-store.ts";

/**
 * The plaintexts of recoverable keys, sealed under the key-encryption key (env LATCHKEY_ENCRYPTION_KEY)
 * with the key's id and workspace authenticated (packages/runtime/src/sealing.ts).
 */
export class KeyVault {
  private readonly sealer: Sealer;

  constructor(kek: Buffer) {
    this.sealer = new Sealer(kek);
  }

  /** From the base64 text of env LATCHKEY_ENCRYPTION_KEY. */
  static fromBase64(text: string): KeyVault {
    return new KeyVault(Buffer.from(text, "base64"));
  }

  /** Names the key-encryption key without revealing it: stored with each ciphertext. */
  get kekId(): string {
    return this.sealer.kekId;
  }

  seal(keyId: string, workspaceId: string, plaintext: string): EncryptedKeyRecord {
    return { keyId, workspaceId, ...this.sealer.seal(workspaceId, keyId, plaintext) };
  }

  /** The plaintext; throws when it was sealed under another key-encryption key or was altered. */
  open(sealed: EncryptedKeyRecord): string {
    return this.sealer.open(sealed.workspaceId, sealed.keyId, sealed);
  }
}
