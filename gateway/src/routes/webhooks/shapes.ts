import type { Delivery, Webhook } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { DOMAIN_EVENT_TYPES } from "@latchkey/runtime";
import { Type } from "@sinclair/typebox";
import { Closed, Enum, Str } from "../../schema.ts";

export const WebhookEvents = () =>
  Type.Array(Enum(DOMAIN_EVENT_TYPES), {
    minItems: 1,
    maxItems: DOMAIN_EVENT_TYPES.length,
    uniqueItems: true,
  });

/** At most 2048 characters (docs/limits.md); the service judges the rest (scheme, credentials, addresses). */
export const WebhookUrl = () => Str(1, 2048);
export const WebhookDescription = () => Str(0, 255);
export const WebhookId = () => Str(1, 255);

const Millis = () => Type.Integer({ minimum: 0, examples: [1_767_225_600_000] });
const NullableString = (example: string) => Type.Union([Type.String(), Type.Null()], { examples: [example] });
const NullableMillis = () =>
  Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { examples: [1_767_225_605_000] });

export const WebhookAnswer = Closed({
  webhookId: Type.String({ examples: ["wh_2cGKbMxRjIzhCxo1IdjH3a"] }),
  url: Type.String({ examples: ["https://example.com/latchkey"] }),
  events: Type.Array(Type.String({ examples: ["key.created"] })),
  description: Type.String({ examples: ["billing sync"] }),
  enabled: Type.Boolean(),
  disabledReason: NullableString(
    "Disabled automatically at 2026-01-01T00:00:00.000Z after 15 consecutive failed attempts; the last: status 500. Fix the receiver, then enable it with webhooks.update.",
  ),
  createdAt: Millis(),
});

export const Attempt = Closed({
  attemptedAt: Millis(),
  statusCode: Type.Union([Type.Integer(), Type.Null()], { examples: [500] }),
  latencyMs: Type.Integer({ minimum: 0, examples: [42] }),
  error: NullableString("answered 500"),
});

export const DeliveryAnswer = Closed({
  deliveryId: Type.String({ examples: ["dlv_2cGKbMxRjIzhCxo1IdjH3a"] }),
  eventId: Type.String({ examples: ["evt_2cGKbMxRjIzhCxo1IdjH3a"] }),
  eventType: Type.String({ examples: ["key.created"] }),
  status: Enum(["pending", "delivered", "failed"] as const),
  createdAt: Millis(),
  nextAttemptAt: NullableMillis(),
  deliveredAt: NullableMillis(),
  attempts: Type.Array(Attempt),
});

export const webhookData = (w: Webhook) => ({
  webhookId: w.id,
  url: w.url,
  events: w.events,
  description: w.description,
  enabled: w.enabled,
  disabledReason: w.disabledReason ?? null,
  createdAt: Number(w.createdAt),
});

export const deliveryData = (d: Delivery) => ({
  deliveryId: d.id,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  createdAt: Number(d.createdAt),
  nextAttemptAt: d.nextAttemptAt === undefined ? null : Number(d.nextAttemptAt),
  deliveredAt: d.deliveredAt === undefined ? null : Number(d.deliveredAt),
  attempts: d.attempts.map((a) => ({
    attemptedAt: Number(a.attemptedAt),
    statusCode: a.statusCode ?? null,
    latencyMs: Number(a.latencyMs),
    error: a.error ?? null,
  })),
});
