import { env } from "@latchkey/runtime";

/** How deliveries are made and kept; every field has its setting in docs/configuration.md. */
export interface WebhookSettings {
  /**
   * The wait before each attempt: the first entry before the first attempt, and so on; one attempt
   * per entry, then the delivery is failed. The default spreads 8 attempts over about 27 hours.
   */
  retryScheduleMs: number[];
  /** Consecutive failed attempts of one webhook, with no success between, after which it is disabled. */
  disableAfterFailures: number;
  /** Longest one attempt may take, connecting included. */
  timeoutMs: number;
  /** Whether URLs may resolve to loopback, private, link-local and similar addresses (development only). */
  allowPrivateUrls: boolean;
  /** Webhooks one workspace may have. */
  maxWebhooksPerWorkspace: number;
  /** How long delivered and failed deliveries (and their attempts) stay in the log. */
  retentionMs: number;
  /** How often the worker looks for due deliveries. */
  pollMs: number;
  /** Attempts one worker has in flight at most (its slots). */
  batchSize: number;
  /**
   * Attempts in flight to one workspace's webhooks at most, counted over every worker and replica:
   * below the slots of a worker, so a workspace's slow receivers leave slots to the others.
   */
  maxInFlightPerWorkspace: number;
  /** Pending deliveries one workspace may have; past it its new events are not queued for it. */
  maxPendingPerWorkspace: number;
}

export const DEFAULT_RETRY_SCHEDULE_MS = [
  0,
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  10 * 3600_000,
];

export const DEFAULT_SETTINGS: WebhookSettings = {
  retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
  disableAfterFailures: 15,
  timeoutMs: 10_000,
  allowPrivateUrls: false,
  maxWebhooksPerWorkspace: 20,
  retentionMs: 30 * 24 * 3600_000,
  pollMs: 1_000,
  batchSize: 10,
  maxInFlightPerWorkspace: 5,
  maxPendingPerWorkspace: 10_000,
};

/** Most attempts a schedule may hold (docs/limits.md). */
export const MAX_ATTEMPTS = 20;

/** A schedule from its setting's text: comma-separated milliseconds, 1 to MAX_ATTEMPTS of them. */
export function retryScheduleOf(text: string): number[] {
  const parts = text.split(",").map((p) => p.trim());
  const values = parts.map(Number);
  if (
    parts.length === 0 ||
    parts.length > MAX_ATTEMPTS ||
    values.some((v, i) => parts[i] === "" || !Number.isSafeInteger(v) || v < 0)
  ) {
    throw new Error(
      `WEBHOOK_RETRY_SCHEDULE_MS must be 1 to ${MAX_ATTEMPTS} comma-separated whole milliseconds (e.g. 0,5000,300000), got '${text}'`,
    );
  }
  return values;
}

/** The settings from env, each defaulting to DEFAULT_SETTINGS (literal defaults, so docs can be checked against them). */
export function webhookSettingsFromEnv(): WebhookSettings {
  const schedule = env.string("WEBHOOK_RETRY_SCHEDULE_MS");
  return {
    retryScheduleMs: schedule === undefined ? DEFAULT_RETRY_SCHEDULE_MS : retryScheduleOf(schedule),
    disableAfterFailures: env.int("WEBHOOK_DISABLE_AFTER_FAILURES", 15, 1),
    timeoutMs: env.int("WEBHOOK_TIMEOUT_MS", 10_000, 1),
    allowPrivateUrls: env.bool("WEBHOOK_ALLOW_PRIVATE_URLS", false),
    maxWebhooksPerWorkspace: env.int("WEBHOOK_MAX_PER_WORKSPACE", 20, 1),
    retentionMs: env.int("WEBHOOK_DELIVERY_RETENTION_MS", 2_592_000_000, 1),
    pollMs: env.int("WEBHOOK_POLL_MS", 1_000, 1),
    batchSize: env.int("WEBHOOK_WORKER_BATCH", 10, 1),
    maxInFlightPerWorkspace: env.int("WEBHOOK_WORKSPACE_MAX_IN_FLIGHT", 5, 1),
    maxPendingPerWorkspace: env.int("WEBHOOK_WORKSPACE_MAX_PENDING", 10_000, 1),
  };
}
