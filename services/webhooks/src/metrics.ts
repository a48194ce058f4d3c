import { Counter, Histogram } from "prom-client";

/** Each delivery attempt, by result: `success` (2xx) or `failure` (anything else, no answer included). */
export const webhookAttempts = new Counter({
  name: "latchkey_webhook_attempts_total",
  help: "Webhook delivery attempts, by result",
  labelNames: ["result"] as const,
});

/** How long receivers took to answer, successes and failures alike. */
export const webhookAttemptSeconds = new Histogram({
  name: "latchkey_webhook_attempt_duration_seconds",
  help: "Duration of webhook delivery attempts",
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

/** Webhooks disabled after a run of failures. */
export const webhooksDisabled = new Counter({
  name: "latchkey_webhooks_disabled_total",
  help: "Webhooks disabled automatically after consecutive failed attempts",
});

/** Deliveries written by the intake (one per event and webhook that wants it). */
export const webhookDeliveriesAdded = new Counter({
  name: "latchkey_webhook_deliveries_added_total",
  help: "Webhook deliveries added by the intake",
});

/** Attempts whose result was not recorded: the delivery's lease had ended and another worker had taken it. */
export const webhookStaleAttempts = new Counter({
  name: "latchkey_webhook_stale_attempts_total",
  help: "Webhook attempts not recorded because their claim's lease had ended and another worker held the delivery",
});

/** DomainEvents the intake dropped, by reason: `unwritable` (a write error no retry can fix), `undecodable`, `buffer_full`, `workspace_buffer_full` (npm start). */
export const webhookEventsDropped = new Counter({
  name: "latchkey_webhook_events_dropped_total",
  help: "Domain events the webhook intake dropped without writing them, by reason",
  labelNames: ["reason"] as const,
});

/** Deliveries the intake did not queue because their workspace had the most pending deliveries it may have. */
export const webhookDeliveriesRefused = new Counter({
  name: "latchkey_webhook_deliveries_refused_total",
  help: "Webhook deliveries not queued because their workspace had WEBHOOK_WORKSPACE_MAX_PENDING pending",
});
