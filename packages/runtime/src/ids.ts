import { hash, randomBytes } from "node:crypto";

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** A resource id such as key_3ZbLk9..., 16 random base58 characters after the prefix. */
export function newId(prefix: string): string {
  const bytes = randomBytes(16);
  let out = `${prefix}_`;
  // 58 * 4 = 232 < 256: rejecting bytes >= 232 keeps every character equally likely.
  for (let i = 0; out.length < prefix.length + 17; i++) {
    if (i === bytes.length) {
      bytes.set(randomBytes(16));
      i = 0;
    }
    const b = bytes[i]!;
    if (b < 232) out += ALPHABET[b % 58];
  }
  return out;
}

/** The prefix newId gives each type of resource an audit record can name (AuditResource's types). */
export const ID_PREFIXES: Readonly<Record<string, string>> = {
  api: "api",
  key: "key",
  identity: "id",
  permission: "perm",
  role: "role",
  namespace: "rlns",
  override: "rlor",
  root_key: "rk",
  workspace: "ws",
  webhook: "wh",
  delivery: "dlv",
  portal: "portal",
  portal_session: "ps",
  forward_auth_policy: "fap",
};

const ID_BODY = new RegExp(`^[${ALPHABET}]{16}$`);

/**
 * Whether `id` has the shape newId gives a resource of `type` (its prefix, "_", 16 base58 characters).
 * A string of another shape may be whatever the caller typed: a key, an e-mail, a name.
 */
export function isIdOf(type: string, id: string): boolean {
  const prefix = ID_PREFIXES[type];
  return prefix !== undefined && id.startsWith(`${prefix}_`) && ID_BODY.test(id.slice(prefix.length + 1));
}

/**
 * The stored form of a key: standard padded base64 of SHA-256 of the full key
 * string (as Unkey). Once per verification: the one-shot crypto.hash costs a
 * third of createHash().update().digest().
 */
export function hashKey(plaintext: string): string {
  return hash("sha256", plaintext, "base64");
}
