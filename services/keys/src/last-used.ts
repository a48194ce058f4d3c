import { type Logger, type LoopProgress, loopProgress } from "@latchkey/runtime";
import type { KeyRecord, KeysStore, KeyUse } from "./store/keys-store.ts";

/** Most keys written by one statement; a larger flush takes several. */
const MAX_PER_STATEMENT = 5_000;

/**
 * Most keys of one workspace written by one flush: the rest wait for the
 * next, so a flush lasts at most this many rows per workspace with keys
 * waiting, however many one workspace verified.
 */
export const LAST_USED_PER_FLUSH = 10_000;

/**
 * Most keys of one workspace whose use waits to be written: a key first
 * verified beyond it in an interval is not noted (its lastUsedAt shows an
 * earlier use), and other workspaces' keys are noted all the same.
 */
export const LAST_USED_MAX_PENDING = 100_000;

/** A key's latest use waiting to be written. */
interface Use {
  readonly workspaceId: string;
  at: number;
}

/**
 * When each key was last verified, without a write per verification: a
 * verification only notes its time in memory, and once a second every key
 * noted since is written in one statement (KeysStore.recordLastUsed), which
 * only ever moves the time forward, so instances flushing in any order agree.
 * close() writes what is left. Reads on this instance see the unwritten time
 * too (latest); other instances see it within a second or so. The reference's
 * is accurate to within 5 minutes; a crash loses at most the last second's.
 *
 * Workspaces share it with a bound each: at most LAST_USED_MAX_PENDING keys of
 * one workspace wait, and a flush writes at most LAST_USED_PER_FLUSH of each,
 * so a workspace verifying more distinct keys than that neither holds memory
 * without bound nor makes the others' times wait behind its own.
 */
export class LastUsed {
  private pending = new Map<string, Use>();
  /** Keys waiting per workspace. */
  private readonly waiting = new Map<string, number>();
  /** What the flush under way is writing, still answered by latest() until it is written. */
  private writing = new Map<string, number>();
  private flushing: Promise<void> = Promise.resolve();
  /** A flush under way: the timer starts none meanwhile, so a slow database does not pile them up. */
  private busy = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Pick<KeysStore, "recordLastUsed">,
    private readonly log: Logger,
    intervalMs = 1_000,
    private readonly progress: LoopProgress = loopProgress("keys.last-used"),
    private readonly bounds = { perFlush: LAST_USED_PER_FLUSH, maxPending: LAST_USED_MAX_PENDING },
  ) {
    this.timer = setInterval(() => this.tick(), intervalMs);
    // Never what keeps a process alive.
    this.timer.unref();
  }

  /** The key (of the workspace) was verified at `at`. */
  record(workspaceId: string, keyId: string, at: number): void {
    const noted = this.pending.get(keyId);
    if (noted !== undefined) {
      if (at > noted.at) noted.at = at;
      return;
    }
    const waiting = this.waiting.get(workspaceId) ?? 0;
    if (waiting >= this.bounds.maxPending) return;
    this.waiting.set(workspaceId, waiting + 1);
    this.pending.set(keyId, { workspaceId, at });
  }

  /** The key's record with the latest use this instance knows of, written or not. */
  latest<K extends Pick<KeyRecord, "id" | "lastUsedAt">>(key: K): K {
    const noted = Math.max(this.pending.get(key.id)?.at ?? 0, this.writing.get(key.id) ?? 0);
    return noted > (key.lastUsedAt ?? 0) ? { ...key, lastUsedAt: noted } : key;
  }

  /** Keys whose use waits to be written, in all and of one workspace. */
  waitingKeys(workspaceId?: string): number {
    return workspaceId === undefined ? this.pending.size : (this.waiting.get(workspaceId) ?? 0);
  }

  /** Writes the uses noted so far (up to LAST_USED_PER_FLUSH of each workspace); one flush at a time. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  /** Stops the timer and writes what is left, every workspace's. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    while (this.pending.size > 0) {
      const before = this.pending.size;
      await this.flush();
      // A write that failed keeps its uses: give up rather than retry for ever on the way out.
      if (this.pending.size >= before) return;
    }
  }

  private tick(): void {
    if (this.busy) return;
    this.busy = true;
    void this.flush().finally(() => {
      this.busy = false;
    });
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) {
      this.progress.mark();
      return;
    }
    const uses: (KeyUse & { workspaceId: string })[] = [];
    const taken = new Map<string, number>();
    for (const [keyId, use] of this.pending) {
      const n = taken.get(use.workspaceId) ?? 0;
      if (n >= this.bounds.perFlush) continue;
      taken.set(use.workspaceId, n + 1);
      uses.push({ keyId, at: use.at, workspaceId: use.workspaceId });
      this.writing.set(keyId, use.at);
      this.pending.delete(keyId);
    }
    for (const [workspaceId, n] of taken) {
      const left = (this.waiting.get(workspaceId) ?? 0) - n;
      if (left <= 0) this.waiting.delete(workspaceId);
      else this.waiting.set(workspaceId, left);
    }
    let written = 0;
    try {
      for (; written < uses.length; written += MAX_PER_STATEMENT) {
        const statement = uses.slice(written, written + MAX_PER_STATEMENT);
        await this.store.recordLastUsed(statement.map(({ keyId, at }) => ({ keyId, at })));
        this.progress.mark();
      }
    } catch (err) {
      // Kept for the next flush (each workspace's bound applies); times noted since win if later.
      for (const u of uses.slice(written)) this.record(u.workspaceId, u.keyId, u.at);
      this.log.warn(
        { err, keys: uses.length - written },
        "lastUsedAt could not be written; retrying at the next flush",
      );
    } finally {
      this.writing = new Map();
    }
  }
}
