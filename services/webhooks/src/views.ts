import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DeliverySchema, WebhookSchema } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import type { DeliveryRecord, WebhookRecord } from "./store/webhook-store.ts";

/** A webhook as answered: never its secret. */
export const webhookView = (w: WebhookRecord): MessageInitShape<typeof WebhookSchema> => ({
  id: w.id,
  url: w.url,
  events: w.events,
  description: w.description,
  enabled: w.enabled,
  ...(w.disabledReason !== null ? { disabledReason: w.disabledReason } : {}),
  createdAt: BigInt(w.createdAt),
});

export const deliveryView = (d: DeliveryRecord): MessageInitShape<typeof DeliverySchema> => ({
  id: d.id,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  createdAt: BigInt(d.createdAt),
  ...(d.status === "pending" && d.nextAttemptAt !== null ? { nextAttemptAt: BigInt(d.nextAttemptAt) } : {}),
  ...(d.deliveredAt !== null ? { deliveredAt: BigInt(d.deliveredAt) } : {}),
  attempts: d.attempts.map((a) => ({
    attemptedAt: BigInt(a.attemptedAt),
    ...(a.statusCode !== null ? { statusCode: a.statusCode } : {}),
    latencyMs: BigInt(a.latencyMs),
    ...(a.error !== null ? { error: a.error } : {}),
  })),
});
