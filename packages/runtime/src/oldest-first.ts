/**
 * A Map's oldest key (the first in insertion order) in amortised constant
 * time, for a cache that drops its oldest entry as it fills.
 * `map.keys().next()` walks every deleted slot ahead of the first live entry,
 * and each eviction leaves one more, so a full Map that evicts on every insert
 * pays for all of them until V8 rebuilds its table, which grows with the cache.
 * This cursor resumes where the last call left off.
 *
 * For callers that delete (or delete and re-insert, which moves it to the
 * back) every key it hands out: a key handed out and left in place is not
 * handed out again until the cursor has been through the rest.
 *
 * A plain bounded cache is an lru-cache (gateway/src/auth.ts, internal-auth.ts); this
 * is for the Maps lru-cache's single order of use does not serve: one order per
 * workspace sharing one bound (services/keys/src/verify/identity-cache.ts) and a
 * rotation that comes round again (services/ratelimit/src/limiter/sliding-windows.ts).
 */
export class OldestFirst<K> {
  private cursor: Iterator<K> | undefined;

  constructor(private readonly map: Map<K, unknown>) {}

  /** The oldest key, or undefined when the Map is empty. */
  next(): K | undefined {
    let step = this.cursor?.next();
    // A Map iterator that has reported done stays done, even once keys are added: start again.
    if (step === undefined || step.done) {
      this.cursor = this.map.keys();
      step = this.cursor.next();
    }
    return step.done ? undefined : step.value;
  }

  /** Drops the oldest keys until the Map holds at most `max` (a cache's bound, before or after an insert). */
  trim(max: number): void {
    while (this.map.size > max) {
      const key = this.next();
      if (key === undefined) return;
      this.map.delete(key);
    }
  }
}
