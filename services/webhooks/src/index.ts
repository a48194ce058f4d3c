export {
  createMemoryWebhookDeps,
  createWebhookDeps,
  type WebhookDeps,
  type WebhookDepsOptions,
} from "./deps.ts";
export {
  InProcessIntake,
  type RunningIntake,
  startIntakeConsumer,
  withDomainEvents,
} from "./intake.ts";
export { webhookMigrations } from "./migrations.ts";
export { webhookRoutes } from "./routes.ts";
export { type WebhookSettings, webhookSettingsFromEnv } from "./settings.ts";
export { WEBHOOKS_AUDIT_TABLE } from "./store/postgres-webhook-store.ts";
export { type RunningWorker, startWorker } from "./worker.ts";
