import { auditSuccess, type Clock, type Logger, loopProgress } from "@latchkey/runtime";
import { Webhook } from "standardwebhooks";
import { webhookAttemptSeconds, webhookAttempts, webhookStaleAttempts, webhooksDisabled } from "./metrics.ts";
import type { SecretVault } from "./secret.ts";
import { ATTEMPT_ERRORS, type AttemptResult, send } from "./sender.ts";
import type { WebhookSettings } from "./settings.ts";
import type { AttemptOutcome, ClaimedDelivery, WebhookStore } from "./store/webhook-store.ts";
import { Wakeup } from "./wakeup.ts";

export interface WorkerDeps {
  store: WebhookStore;
  vault: SecretVault;
  settings: WebhookSettings;
  clock: Clock;
  log: Logger;
}

/** The body every attempt of a delivery sends, the same each time: the event's type, time (ISO) and data. */
export function payloadOf(d: Pick<ClaimedDelivery, "eventType" | "occurredAt" | "dataJson">): string {
  return `{"type":${JSON.stringify(d.eventType)},"timestamp":${JSON.stringify(new Date(d.occurredAt).toISOString())},"data":${d.dataJson}}`;
}

/**
 * The Standard Webhooks headers of one attempt: webhook-id is the event's id (the same on every
 * attempt and every redelivery, so a receiver can drop repeats), webhook-timestamp the attempt's
 * time in seconds, webhook-signature `v1,` and the HMAC-SHA256 of id.timestamp.body, written by the
 * `standardwebhooks` package so that it is what that package's verify expects.
 */
export function signedHeaders(
  secret: string,
  eventId: string,
  at: Date,
  body: string,
): Record<string, string> {
  return {
    "webhook-id": eventId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign(eventId, at, body),
  };
}

/** What becomes of a delivery after its attempt number `made` (1 for the first) ended as `result`. */
export function outcomeOf(
  result: AttemptResult,
  made: number,
  schedule: readonly number[],
  now: number,
): AttemptOutcome {
  if (result.error === null) return { status: "delivered" };
  if (made >= schedule.length) return { status: "failed" };
  return { status: "pending", nextAttemptAt: now + schedule[made]! };
}

/** Why a webhook was disabled, as its owner reads it in webhooks.list. */
export function disabledReasonOf(at: number, failures: number, last: AttemptResult): string {
  const what =
    last.error ?? (last.statusCode !== null ? ATTEMPT_ERRORS.status(last.statusCode) : "no answer");
  return `Disabled automatically at ${new Date(at).toISOString()} after ${failures} consecutive failed attempts; the last: ${what}. Fix the receiver, then enable it with webhooks.update.`;
}

/** One attempt of a claimed delivery: signed, sent, and recorded. */
export async function attempt(deps: WorkerDeps, d: ClaimedDelivery): Promise<AttemptResult> {
  const { settings } = deps;
  const body = payloadOf(d);
  const at = deps.clock.now();
  let headers: Record<string, string> | undefined;
  try {
    const secret = deps.vault.open(d.webhookId, d.workspaceId, d.sealedSecret);
    headers = signedHeaders(secret, d.eventId, new Date(at), body);
  } catch (err) {
    // A secret that does not open (another encryption key) is the operator's to fix; it fails like any attempt.
    deps.log.error(
      { err: (err as Error).message, webhookId: d.webhookId },
      "webhook attempt could not be signed",
    );
  }
  const result: AttemptResult = headers
    ? await send(d.url, headers, body, {
        timeoutMs: settings.timeoutMs,
        allowPrivate: settings.allowPrivateUrls,
      })
    : { statusCode: null, latencyMs: 0, error: ATTEMPT_ERRORS.unsigned };
  if (result.detail !== undefined) {
    // What the owner is not told (the address a host resolved to, the resolver's or socket's
    // words) is Latchkey's to see; never the URL, which may carry a token.
    deps.log.info(
      {
        deliveryId: d.id,
        webhookId: d.webhookId,
        workspaceId: d.workspaceId,
        error: result.error,
        detail: result.detail,
      },
      "webhook attempt failed",
    );
  }
  webhookAttempts.inc({ result: result.error === null ? "success" : "failure" });
  webhookAttemptSeconds.observe(result.latencyMs / 1000);
  const now = deps.clock.now();
  const made = d.attemptsMade + 1;
  const outcome = outcomeOf(result, made, settings.retryScheduleMs, now);
  const { recorded, disabled } = await deps.store.recordAttempt(
    d,
    { attemptedAt: at, statusCode: result.statusCode, latencyMs: result.latencyMs, error: result.error },
    outcome,
    settings.disableAfterFailures,
    disabledReasonOf(now, settings.disableAfterFailures, result),
    // Written only if this attempt disables the webhook, in the same transaction: no request asked
    // for it, so the actor is the system, naming the webhook and the attempt's delivery.
    result.error === null
      ? undefined
      : auditSuccess(
          "system",
          d.workspaceId,
          "webhooks.disable",
          [
            { type: "webhook", id: d.webhookId },
            { type: "delivery", id: d.id },
          ],
          ["enabled", "disabledReason"],
          now,
        ),
  );
  if (!recorded) {
    // The lease ended before the attempt did (a receiver slower than the timeout allows, a paused
    // process): another worker holds the delivery now, and its result is the one kept.
    webhookStaleAttempts.inc();
    deps.log.warn(
      { deliveryId: d.id, webhookId: d.webhookId, workspaceId: d.workspaceId },
      "webhook attempt not recorded: its lease had ended",
    );
  }
  if (disabled) {
    webhooksDisabled.inc();
    deps.log.warn(
      { webhookId: d.webhookId, workspaceId: d.workspaceId, failures: settings.disableAfterFailures },
      "webhook disabled after consecutive failures",
    );
  }
  return result;
}

/**
 * Claims the due deliveries once and sends them, all at once, with no cap per webhook; answers how
 * many were attempted. For tests and one-off rounds; startWorker refills its slots as attempts end.
 */
export async function deliverDue(deps: WorkerDeps): Promise<number> {
  const { settings } = deps;
  // Held past the attempt's timeout, so only a worker that died leaves a delivery to be taken again.
  const leaseMs = settings.timeoutMs + 30_000;
  const claimed = await deps.store.claimDue(deps.clock.now(), settings.batchSize, leaseMs);
  await Promise.all(claimed.map((d) => attempt(deps, d)));
  return claimed.length;
}

/** Attempts in flight to one webhook at most, over every worker (docs/limits.md), so a slow one cannot take every slot. */
export const MAX_IN_FLIGHT_PER_WEBHOOK = 2;

/** How often the retention loop deletes what retention no longer keeps. */
const RETENTION_EVERY_MS = 3600_000;

export interface RunningWorker {
  /** Waits for the attempts in flight, then stops. */
  stop(): Promise<void>;
}

/**
 * The delivery worker: `batchSize` slots of attempts in flight, filled by one loop that claims due
 * deliveries for its free slots whenever it is woken (an attempt ended) and every `pollMs`. Several
 * workers, in several replicas, share the deliveries through the claim (store/webhook-store.ts),
 * which counts every worker's attempts in flight and keeps each workspace within
 * `maxInFlightPerWorkspace` and each webhook within MAX_IN_FLIGHT_PER_WEBHOOK, the workspaces taking
 * the slots by turns: one workspace's slow or failing receivers hold its share of the slots, not the
 * others'. A second loop deletes, once an hour, what retention no longer keeps. Off every request's
 * path. Each loop marks its progress (`webhooks.delivery`, `webhooks.retention`).
 */
export function startWorker(deps: WorkerDeps, options: { retentionEveryMs?: number } = {}): RunningWorker {
  const { settings } = deps;
  // Held past the attempt's timeout, so only a worker that died leaves a delivery to be taken again.
  const leaseMs = settings.timeoutMs + 30_000;
  const caps = { perWorkspace: settings.maxInFlightPerWorkspace, perWebhook: MAX_IN_FLIGHT_PER_WEBHOOK };
  const delivery = loopProgress("webhooks.delivery");
  const retention = loopProgress("webhooks.retention");
  const wakeup = new Wakeup();
  const retentionWakeup = new Wakeup();
  const inFlight = new Set<Promise<void>>();
  let stopping = false;

  const start = (d: ClaimedDelivery) => {
    const running: Promise<void> = attempt(deps, d)
      .then(
        () => undefined,
        (err: unknown) =>
          deps.log.warn(
            { err: (err as Error).message, deliveryId: d.id },
            "webhook attempt failed to record",
          ),
      )
      .finally(() => {
        inFlight.delete(running);
        delivery.mark();
        wakeup.notify();
      });
    inFlight.add(running);
  };

  const deliveries = (async () => {
    while (!stopping) {
      const free = settings.batchSize - inFlight.size;
      if (free > 0) {
        try {
          const claimed = await deps.store.claimDue(deps.clock.now(), free, leaseMs, caps);
          // Started even when stopping: they are leased, and stop() waits for what is in flight.
          for (const d of claimed) start(d);
          if (claimed.length === 0) delivery.mark();
        } catch (err) {
          deps.log.warn({ err: (err as Error).message }, "webhook delivery claim failed; trying again");
        }
      }
      await wakeup.wait(settings.pollMs);
    }
  })();

  const pruning = (async () => {
    while (!stopping) {
      try {
        const pruned = await deps.store.pruneDeliveries(
          deps.clock.now() - settings.retentionMs,
          undefined,
          () => {
            retention.mark();
            return !stopping;
          },
        );
        if (pruned > 0) deps.log.info({ pruned }, "old webhook deliveries deleted");
      } catch (err) {
        deps.log.warn({ err: (err as Error).message }, "webhook retention failed; trying again");
      }
      await retentionWakeup.wait(options.retentionEveryMs ?? RETENTION_EVERY_MS);
    }
  })();

  return {
    async stop() {
      stopping = true;
      wakeup.notify();
      retentionWakeup.notify();
      await deliveries;
      await pruning;
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}
