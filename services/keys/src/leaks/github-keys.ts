import { createPublicKey, type KeyObject, verify } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Clock } from "@latchkey/runtime";

/**
 * GitHub's secret-scanning public keys, which sign each partner report (ECDSA P-256, SHA-256, over
 * the raw body; the signature in Github-Public-Key-Signature as base64 DER, the key named by
 * Github-Public-Key-Identifier). SECRET_SCANNING_KEYS names where they are: an https:// or http://
 * URL answering GitHub's shape (https://api.github.com/meta/public_keys/secret_scanning), fetched
 * when first needed and again when a report names a key not held (at most once a minute, so
 * reports naming made-up keys cannot make Latchkey fetch in a loop); or a file in the same shape.
 */
export interface ScanningKeySource {
  /** A URL, or a file path. */
  location: string;
  fetch?: typeof fetch;
}

/** SECRET_SCANNING_KEYS: where GitHub's keys are, or undefined when GitHub's reports are not received. */
export function scanningKeysFromEnv(value: string | undefined): ScanningKeySource | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  return { location: value.trim() };
}

/** How long after a fetch an unknown key identifier may make another. */
const REFETCH_MS = 60_000;
/** The longest a fetch of the keys may take. */
const FETCH_TIMEOUT_MS = 5_000;

interface Published {
  public_keys?: { key_identifier?: unknown; key?: unknown }[];
}

export class ScanningKeys {
  private keys = new Map<string, KeyObject>();
  private loadedAt: number | undefined;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly source: ScanningKeySource,
    private readonly clock: Clock,
  ) {}

  /** Whether `signature` (base64 DER) is GitHub's, by the key `identifier`, over `body`. */
  async verifies(body: Uint8Array, identifier: string, signature: string): Promise<boolean> {
    if (identifier === "" || signature === "") return false;
    let key = this.keys.get(identifier);
    const stale = this.loadedAt === undefined || this.clock.now() - this.loadedAt >= REFETCH_MS;
    if (key === undefined && stale) {
      await this.load();
      key = this.keys.get(identifier);
    }
    if (key === undefined) return false;
    try {
      return verify("sha256", body, { key, dsaEncoding: "der" }, Buffer.from(signature, "base64"));
    } catch {
      return false;
    }
  }

  private load(): Promise<void> {
    this.loading ??= this.read()
      .then((keys) => {
        this.keys = keys;
      })
      .finally(() => {
        this.loadedAt = this.clock.now();
        this.loading = undefined;
      });
    return this.loading;
  }

  private async read(): Promise<Map<string, KeyObject>> {
    const { location } = this.source;
    const text = /^https?:\/\//.test(location)
      ? await (this.source.fetch ?? fetch)(location, {
          signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
          headers: { accept: "application/json" },
        }).then((res) => {
          if (!res.ok) throw new Error(`GitHub's secret-scanning keys answered ${res.status}`);
          return res.text();
        })
      : await readFile(location, "utf8");
    return parseScanningKeys(text);
  }
}

/** GitHub's `{"public_keys": [{"key_identifier", "key"}]}`; keys that do not parse are left out. */
export function parseScanningKeys(text: string): Map<string, KeyObject> {
  const published = JSON.parse(text) as Published;
  const keys = new Map<string, KeyObject>();
  for (const entry of published.public_keys ?? []) {
    if (typeof entry.key_identifier !== "string" || typeof entry.key !== "string") continue;
    try {
      keys.set(entry.key_identifier, createPublicKey(entry.key));
    } catch {
      // A key Node cannot read verifies nothing.
    }
  }
  return keys;
}
