import type { Logger } from "@latchkey/runtime";
import type { KeyRecord, KeysStore } from "./store/keys-store.ts";

/** Most keys written by one statement; a larger flush takes several. */
const MAX_PER_STATEMENT = 5_000;

/**
 * When each key was last verified, without a write per verification: a
 * verification only notes its time in memory (one Map.set), and once a second
 * every key noted since is written in one statement (KeysStore.recordLastUsed),
 * which only ever moves the time forward, so instances flushing in any order
 * agree. close() writes what is left. Reads on this instance see the unwritten
 * time too (latest); other instances see it within a second or so. The
 * reference's is accurate to within 5 minutes; a crash loses at most the last
 * second's.
 */
export class LastUsed {
  private pending = new Map<string, number>();
  /** What the flush under way is writing, still answered by latest() until it is written. */
  private writing = new Map<string, number>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Pick<KeysStore, "recordLastUsed">,
    private readonly log: Logger,
    intervalMs = 1_000,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    // Never what keeps a process alive.
    this.timer.unref();
  }

  /** The key was verified at `at`. */
  record(keyId: string, at: number): void {
    const noted = this.pending.get(keyId);
    if (noted === undefined || at > noted) this.pending.set(keyId, at);
  }

  /** The key's record with the latest use this instance knows of, written or not. */
  latest<K extends Pick<KeyRecord, "id" | "lastUsedAt">>(key: K): K {
    const noted = Math.max(this.pending.get(key.id) ?? 0, this.writing.get(key.id) ?? 0);
    return noted > (key.lastUsedAt ?? 0) ? { ...key, lastUsedAt: noted } : key;
  }

  /** Writes every use noted so far; one flush at a time. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    this.writing = this.pending;
    this.pending = new Map();
    const uses = [...this.writing].map(([keyId, at]) => ({ keyId, at }));
    try {
      for (let i = 0; i < uses.length; i += MAX_PER_STATEMENT) {
        await this.store.recordLastUsed(uses.slice(i, i + MAX_PER_STATEMENT));
      }
    } catch (err) {
      // Kept for the next flush; times noted since win if later.
      for (const u of uses) this.record(u.keyId, u.at);
      this.log.warn(
        { err, keys: uses.length },
        "lastUsedAt could not be written; retrying at the next flush",
      );
    } finally {
      this.writing = new Map();
    }
  }
}
