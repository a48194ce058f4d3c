import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/** A plaintext sealed by a Sealer: its parts in base64, and which key-encryption key sealed it. */
export interface Sealed {
  kekId: string;
  iv: string;
  tag: string;
  ciphertext: string;
}

/**
 * AES-256-GCM under one key-encryption key (env LATCHKEY_ENCRYPTION_KEY, the base64 of 32 random
 * bytes), for what Latchkey must be able to read back rather than keep as a hash: recoverable keys
 * (services/keys/src/vault.ts) and webhooks' signing secrets (services/webhooks/src/secret.ts). The
 * owner's workspace and id are authenticated with each ciphertext, so a sealed text cannot be moved
 * to another owner's row. Plaintexts are never logged.
 */
export class Sealer {
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

  seal(workspaceId: string, ownerId: string, plaintext: string): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.kek, iv);
    cipher.setAAD(aad(workspaceId, ownerId));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return {
      kekId: this.kekId,
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      ciphertext: ciphertext.toString("base64"),
    };
  }

  /** The plaintext; throws when it was sealed under another key, for another owner, or was altered. */
  open(workspaceId: string, ownerId: string, sealed: Sealed): string {
    if (sealed.kekId !== this.kekId) {
      throw new Error(`${ownerId} was sealed under ${sealed.kekId}, not the configured ${this.kekId}`);
    }
    const decipher = createDecipheriv("aes-256-gcm", this.kek, Buffer.from(sealed.iv, "base64"));
    decipher.setAAD(aad(workspaceId, ownerId));
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
    return Buffer.concat([
      decipher.update(Buffer.from(sealed.ciphertext, "base64")),
      decipher.final(),
    ]).toString("utf8");
  }
}

const aad = (workspaceId: string, ownerId: string) => Buffer.from(`${workspaceId}/${ownerId}`, "utf8");
