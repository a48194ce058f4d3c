import { randomBytes } from "node:crypto";
import { Sealer } from "@latchkey/runtime";

/** A new signing secret as the Standard Webhooks specification writes it: whsec_ and the base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/**
 * Webhook signing secrets, sealed under the key-encryption key the keys service seals recoverable keys
 * with (env LATCHKEY_ENCRYPTION_KEY; packages/runtime/src/sealing.ts). A secret must be recoverable to
 * sign with, so it cannot be stored as a hash; sealed, a copy of the database alone does not let anyone
 * sign as Latchkey. The webhook's id and workspace are authenticated with each ciphertext, so a sealed
 * secret cannot be moved to another webhook. Stored as one text: kekId.iv.tag.ciphertext (base64 parts).
 */
export class SecretVault {
  private readonly sealer: Sealer;

  constructor(kek: Buffer) {
    this.sealer = new Sealer(kek);
  }

  static fromBase64(text: string): SecretVault {
    return new SecretVault(Buffer.from(text, "base64"));
  }

  get kekId(): string {
    return this.sealer.kekId;
  }

  seal(webhookId: string, workspaceId: string, secret: string): string {
    const { kekId, iv, tag, ciphertext } = this.sealer.seal(workspaceId, webhookId, secret);
    return [kekId, iv, tag, ciphertext].join(".");
  }

  /** The secret; throws when it was sealed under another key or for another webhook, or was altered. */
  open(webhookId: string, workspaceId: string, sealed: string): string {
    const [kekId = "", iv = "", tag = "", ciphertext = ""] = sealed.split(".");
    return this.sealer.open(workspaceId, webhookId, { kekId, iv, tag, ciphertext });
  }
}
