/**
 * Wakes a loop that waits for work. A notice given while the loop is busy is kept until its next
 * wait, which then returns at once: however the notices and the loop's steps interleave, none is
 * lost, and the loop, the only one waiting, never sleeps through work it was told of.
 */
export class Wakeup {
  private noticed = false;
  private wake: (() => void) | undefined;

  notify(): void {
    this.noticed = true;
    this.wake?.();
  }

  /** Resolves at the next notice (at once when one came since the last wait) or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.noticed) {
      this.noticed = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        this.noticed = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
