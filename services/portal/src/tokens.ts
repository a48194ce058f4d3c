import { createHash, randomBytes } from "node:crypto";

/**
 * A session's exchange code (`pst_`) and access token (`pat_`): 32 random bytes each, shown once
 * and kept only as their SHA-256, so the table holds nothing that opens a session.
 */
export const newCode = () => `pst_${randomBytes(32).toString("base64url")}`;
export const newAccessToken = () => `pat_${randomBytes(32).toString("base64url")}`;

/** What the store keeps of a code or token. */
export const hashOf = (secret: string) => createHash("sha256").update(secret).digest("base64url");
