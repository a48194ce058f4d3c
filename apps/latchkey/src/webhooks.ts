import {
  type EventSink,
  type Logger,
  localTransport,
  migrate,
  type NatsBus,
  type Sql,
} from "@latchkey/runtime";
import {
  createWebhookDeps,
  InProcessIntake,
  type RunningIntake,
  startIntakeConsumer,
  startWorker,
  type WebhookSettings,
  webhookMigrations,
  webhookRoutes,
  withDomainEvents,
} from "@latchkey/webhooks";

/**
 * The webhooks context in the one process of `npm start`: its tables in the process's database,
 * its delivery worker, and its intake. Where events go through JetStream (`nats`), the intake is
 * the same durable consumer the separate service runs; otherwise the DomainEvents the services
 * publish in process are handed to the in-process intake, whose rows in PostgreSQL are the outbox
 * the worker drains, and `events` is the sink the services must publish to.
 */
export async function composeWebhooks(options: {
  sql: Sql;
  encryptionKey: Buffer;
  /** Where the other events go (analytics). */
  events: EventSink;
  /** Set when events go through JetStream. */
  nats?: NatsBus["nc"];
  settings?: Partial<WebhookSettings>;
  log: Logger;
}) {
  const { sql, log } = options;
  await migrate(sql, "webhooks", webhookMigrations);
  const deps = createWebhookDeps({
    sql,
    encryptionKey: options.encryptionKey,
    log,
    settings: options.settings,
  });
  let events = options.events;
  let consumer: RunningIntake | undefined;
  let intake: InProcessIntake | undefined;
  if (options.nats) {
    consumer = await startIntakeConsumer({
      nats: options.nats,
      store: deps.store,
      clock: deps.clock,
      log,
      firstDelayMs: deps.settings.retryScheduleMs[0],
    });
  } else {
    const inProcess = new InProcessIntake(deps.store, deps.clock, log, {
      firstDelayMs: deps.settings.retryScheduleMs[0],
    });
    intake = inProcess;
    events = withDomainEvents(options.events, (e) => inProcess.take(e));
  }
  const worker = startWorker(deps);
  return {
    deps,
    events,
    transport: localTransport(webhookRoutes(deps)),
    /** Resolves once every DomainEvent handed over in process is written as deliveries. */
    flush: () => intake?.flush() ?? Promise.resolve(),
    async close() {
      await consumer?.stop();
      await intake?.close();
      await worker.stop();
    },
  };
}
