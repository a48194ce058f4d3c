import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/** A new signing secret as the Standard Webhooks specification writes it: whsec_ and the base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/**
 * Seals webhook signing secrets with AES-256-GCM under the key-encryption key the keys service
 * seals recoverable keys with (env LATCHKEY_ENCRYPTION_KEY; services/keys/src/vault.ts). A secret
 * must be recoverable to sign with, so it cannot be stored as a hash; sealed, a copy of the
 * database alone does not let anyone sign as Latchkey. The webhook's id and workspace are
 * authenticated with each ciphertext, so a sealed secret cannot be moved to another webhook.
 * Stored as one text: kekId.iv.tag.ciphertext (base64 parts).
 */
export class SecretVault {
  readonly kekId: string;

  constructor(private readonly kek: Buffer) {
    if (kek.length !== 32) {
      throw new Error(
        `the key-encryption key must be 32 bytes (base64 of 32 random bytes), got ${kek.length}`,
      );
    }
    this.kekId = `kek_${createHash("sha256").update(kek).digest("hex").slice(0, 16)}`;
  }

  static fromBase64(text: string): SecretVault {
    return new SecretVault(Buffer.from(text, "base64"));
  }

  seal(webhookId: string, workspaceId: string, secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.kek, iv);
    cipher.setAAD(aad(webhookId, workspaceId));
    const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    return [
      this.kekId,
      iv.toString("base64"),
      cipher.getAuthTag().toString("base64"),
      ciphertext.toString("base64"),
    ].join(".");
  }

  /** The secret; throws when it was sealed under another key or for another webhook, or was altered. */
  open(webhookId: string, workspaceId: string, sealed: string): string {
    const [kekId, iv, tag, ciphertext] = sealed.split(".");
    if (kekId !== this.kekId) {
      throw new Error(
        `the secret of webhook ${webhookId} was sealed under ${kekId}, not the configured ${this.kekId}`,
      );
    }
    const decipher = createDecipheriv("aes-256-gcm", this.kek, Buffer.from(iv ?? "", "base64"));
    decipher.setAAD(aad(webhookId, workspaceId));
    decipher.setAuthTag(Buffer.from(tag ?? "", "base64"));
    return Buffer.concat([
      decipher.update(Buffer.from(ciphertext ?? "", "base64")),
      decipher.final(),
    ]).toString("utf8");
  }
}

const aad = (webhookId: string, workspaceId: string) => Buffer.from(`${workspaceId}/${webhookId}`, "utf8");
