/**
 * What the soak's two workspaces (bench/soak-victim.ts, bench/soak-attacker.ts) share: a caller
 * that records every request it makes, and an open-loop pacer. Requests are sent on schedule
 * whether or not earlier ones have been answered, so a slow server shows as latency, not as fewer
 * requests (no coordinated omission); past `maxInFlight` a request is skipped and counted.
 */
import { DOMAIN_EVENT_TYPES } from "@latchkey/runtime";

/** One request: operation, start (unix ms), latency (ms), HTTP status (0: no answer: refused, reset, timed out). */
export interface Sample {
  op: string;
  t: number;
  ms: number;
  status: number;
  /** An error answer's detail (the first 120 characters), which tells a dependency's 503 from the gateway's own. */
  detail?: string;
}

export interface Answer {
  status: number;
  body: any;
  t: number;
  ms: number;
}

/** Every webhook event type (the runtime's one list): both workspaces' webhooks take them all. */
export const EVENT_TYPES = DOMAIN_EVENT_TYPES;

/** Messages between the soak (bench/soak.ts) and its workers, over the fork's IPC channel. */
export type ToWorker =
  | { type: "attack" }
  | { type: "stop" }
  /** drainS: how long the victim waits for its last events (0 once Latchkey has exited). */
  | { type: "report"; drainS?: number }
  | { type: "exit" };

/** The client address this worker's requests carry (X-Forwarded-For), as a proxy in front of Latchkey reports it. */
const clientAddress = process.env["SOAK_CLIENT_ADDRESS"];
export const clientHeader: Record<string, string> = clientAddress ? { "x-forwarded-for": clientAddress } : {};

export class Recorder {
  readonly samples: Sample[] = [];
  private readonly texts = new Map<string, number>();
  /** A few request ids of each kind of failed answer ("op status"), to find in Latchkey's log. */
  readonly failedIds: Record<string, string[]> = {};

  /** POST /v2/<op> with `rootKey`, recorded; never throws (no answer is status 0). */
  async call(
    baseUrl: string,
    rootKey: string,
    op: string,
    body: unknown,
    options: { timeoutMs?: number; label?: string } = {},
  ): Promise<Answer> {
    const t = Date.now();
    const started = performance.now();
    let status = 0;
    let parsed: any;
    try {
      const res = await fetch(`${baseUrl}/v2/${op}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}`, ...clientHeader },
        body: typeof body === "string" ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
      });
      const text = await res.text();
      status = res.status;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
      if (status >= 400) {
        this.remember(`${options.label ?? op} ${status}: ${errorText(parsed)}`);
        const id = parsed?.meta?.requestId;
        const kind = `${options.label ?? op} ${status}`;
        const ids = this.failedIds[kind] ?? [];
        this.failedIds[kind] = ids;
        if (typeof id === "string" && ids.length < 3) ids.push(id);
      }
    } catch (err) {
      this.remember(`${options.label ?? op} no answer: ${(err as Error).name}: ${(err as Error).message}`);
    }
    const ms = performance.now() - started;
    const sample: Sample = { op: options.label ?? op, t, ms, status };
    if (status >= 400) sample.detail = errorText(parsed).slice(0, 120);
    this.samples.push(sample);
    return { status, body: parsed, t, ms };
  }

  /** The distinct error answers seen, with how often: what a reader needs to tell one failure from another. */
  errors(): [string, number][] {
    return [...this.texts.entries()].sort((a, b) => b[1] - a[1]);
  }

  private remember(text: string) {
    const key = text.slice(0, 300);
    if (this.texts.size < 200 || this.texts.has(key)) this.texts.set(key, (this.texts.get(key) ?? 0) + 1);
  }
}

const errorText = (body: any) =>
  typeof body === "object" && body !== null
    ? (body.error?.detail ?? body.error?.title ?? JSON.stringify(body))
    : String(body);

/**
 * Calls `send` `perSecond` times a second until stopped, on a 10 ms tick that catches up on what it
 * owes; at most `maxInFlight` unanswered (the others skipped). Answers stop(), which resolves once
 * the calls in flight have ended, and the count skipped.
 */
export function pace(perSecond: number, send: () => Promise<unknown>, maxInFlight = 64) {
  let inFlight = 0;
  let skipped = 0;
  let sent = 0;
  const started = Date.now();
  const idle: (() => void)[] = [];
  const timer =
    perSecond > 0
      ? setInterval(() => {
          const owed = Math.floor(((Date.now() - started) * perSecond) / 1000) - sent - skipped;
          for (let i = 0; i < owed; i++) {
            if (inFlight >= maxInFlight) {
              skipped++;
              continue;
            }
            sent++;
            inFlight++;
            send()
              .catch(() => {})
              .finally(() => {
                inFlight--;
                if (inFlight === 0) for (const r of idle.splice(0)) r();
              });
          }
        }, 10)
      : undefined;
  return {
    skipped: () => skipped,
    sent: () => sent,
    async stop() {
      if (timer) clearInterval(timer);
      if (inFlight > 0) await new Promise<void>((r) => idle.push(r));
    },
  };
}

/**
 * Runs `step` again and again, one at a time, `gapMs` apart, until stopped; stop() waits for the step
 * running. An infinite gap (a rate of 0, an interval of 0 turned off) never runs it.
 */
export function loop(step: () => Promise<unknown>, gapMs: number) {
  if (!Number.isFinite(gapMs)) return { stop: async () => {} };
  let stopped = false;
  let wake: (() => void) | undefined;
  const done = (async () => {
    while (!stopped) {
      await step().catch(() => {});
      if (stopped) break;
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, gapMs);
      });
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await done;
    },
  };
}

/** Milliseconds between runs of something done every `seconds` (0: never). */
export const everyMs = (seconds: number) => (seconds > 0 ? seconds * 1000 : Number.POSITIVE_INFINITY);

/** The `p`th percentile (0 to 100) of `values`, nearest rank; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The worker's message channel: what the soak sends, as a queue of awaited messages. */
export function fromSoak() {
  const waiting = new Map<ToWorker["type"], (m: ToWorker) => void>();
  const arrived = new Map<ToWorker["type"], ToWorker>();
  process.on("message", (m: ToWorker) => {
    arrived.set(m.type, m);
    waiting.get(m.type)?.(m);
    if (m.type === "exit") process.exit(0);
  });
  // The soak gone (killed, crashed): so is this worker, whatever it was doing.
  process.on("disconnect", () => process.exit(0));
  return {
    next: (type: ToWorker["type"]): Promise<ToWorker> => {
      const m = arrived.get(type);
      return m ? Promise.resolve(m) : new Promise<ToWorker>((r) => waiting.set(type, r));
    },
    send: (message: unknown) => process.send?.(message),
  };
}
