/**
 * Coalesces concurrent calls into batches: items that arrive in the same
 * event-loop turn, or while `maxInFlight` batches are already out, travel
 * together in the next batch. At low load a call is flushed on the next tick,
 * so coalescing adds no timer and no delay.
 */
export class Batcher<I, O> {
  private queue: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly flush: (items: I[]) => Promise<O[]>,
    private readonly options: { maxBatch?: number; maxInFlight?: number } = {},
  ) {}

  call(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule() {
    if (this.scheduled || this.inFlight >= (this.options.maxInFlight ?? 2)) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.send();
    });
  }

  private send() {
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.options.maxBatch ?? 512);
    this.inFlight++;
    this.flush(batch.map((b) => b.item))
      .then(
        (results) => {
          for (let i = 0; i < batch.length; i++) {
            const r = results[i];
            if (r === undefined) batch[i]!.reject(new Error("batch answered fewer results than items"));
            else batch[i]!.resolve(r);
          }
        },
        (err) => {
          for (const b of batch) b.reject(err);
        },
      )
      .finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.schedule();
      });
    if (this.queue.length > 0) this.schedule();
  }
}
