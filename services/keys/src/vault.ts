import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { EncryptedKeyRecord } from "./store/keys-store.ts";

/**
 * Encrypts the plaintexts of recoverable keys with AES-256-GCM under one
 * key-encryption key (env LATCHKEY_ENCRYPTION_KEY, base64 of 32 bytes). The
 * key's id and workspace are authenticated with each ciphertext, so a sealed
 * plaintext cannot be moved to another key's row. Plaintexts are never logged.
 */
export class KeyVault {
  /** Names the key-encryption key without revealing it: stored with each ciphertext. */
  readonly kekId: string;

  constructor(private readonly kek: Buffer) {
    if (kek.length !== 32) {
      throw new Error(
        `the key-encryption key must be 32 bytes (base64 of 32 random bytes), got ${kek.length}`,
      );
    }
    this.kekId = `kek_${createHash("sha256").update(kek).digest("hex").slice(0, 16)}`;
  }

  /** From the base64 text of env LATCHKEY_ENCRYPTION_KEY. */
  static fromBase64(text: string): KeyVault {
    return new KeyVault(Buffer.from(text, "base64"));
  }

  seal(keyId: string, workspaceId: string, plaintext: string): EncryptedKeyRecord {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.kek, iv);
    cipher.setAAD(aad(keyId, workspaceId));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return {
      keyId,
      workspaceId,
      ciphertext: ciphertext.toString("base64"),
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      kekId: this.kekId,
    };
  }

  /** The plaintext; throws when it was sealed under another key-encryption key or was altered. */
  open(sealed: EncryptedKeyRecord): string {
    if (sealed.kekId !== this.kekId) {
      throw new Error(
        `key ${sealed.keyId} was sealed under ${sealed.kekId}, not the configured ${this.kekId}`,
      );
    }
    const decipher = createDecipheriv("aes-256-gcm", this.kek, Buffer.from(sealed.iv, "base64"));
    decipher.setAAD(aad(sealed.keyId, sealed.workspaceId));
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
    return Buffer.concat([
      decipher.update(Buffer.from(sealed.ciphertext, "base64")),
      decipher.final(),
    ]).toString("utf8");
  }
}

const aad = (keyId: string, workspaceId: string) => Buffer.from(`${workspaceId}/${keyId}`, "utf8");
