import type { PageRequest } from "@latchkey/proto/common/v1/common_pb";
import { DOMAIN_EVENT_TYPES, domainError, ErrorReason, invalidInput } from "@latchkey/runtime";
import type { WebhookDeps } from "./deps.ts";
import type { DeliveryStatus, WebhookRecord } from "./store/webhook-store.ts";
import { urlProblem } from "./url-safety.ts";

/** Longest description (docs/limits.md). */
export const MAX_DESCRIPTION_LENGTH = 255;
export const DEFAULT_PAGE_SIZE = 100;

export const webhookNotFound = (id: string) =>
  domainError(ErrorReason.WEBHOOK_NOT_FOUND, `The webhook '${id}' was not found.`);
export const deliveryNotFound = (id: string) =>
  domainError(ErrorReason.WEBHOOK_DELIVERY_NOT_FOUND, `The delivery '${id}' was not found.`);

/** The caller's webhook, or WEBHOOK_NOT_FOUND (another workspace's included). */
export async function visibleWebhook(
  deps: WebhookDeps,
  workspaceId: string,
  id: string,
): Promise<WebhookRecord> {
  if (id === "" || id.length > 255) throw webhookNotFound(id);
  const webhook = await deps.store.findWebhook(workspaceId, id);
  if (!webhook) throw webhookNotFound(id);
  return webhook;
}

export function urlOf(value: string, deps: WebhookDeps, location = "/url"): string {
  const problem = urlProblem(value, deps.settings.allowPrivateUrls);
  if (problem) throw invalidInput(location, problem);
  return value;
}

/** 1 to DOMAIN_EVENT_TYPES.length distinct event types of DOMAIN_EVENT_TYPES, in the order given. */
export function eventsOf(values: readonly string[], location = "/events"): string[] {
  if (values.length === 0) throw invalidInput(location, "events must name at least one event type");
  const known: readonly string[] = DOMAIN_EVENT_TYPES;
  const seen = new Set<string>();
  values.forEach((v, i) => {
    if (!known.includes(v)) {
      throw invalidInput(
        `${location}/${i}`,
        `'${v}' is not an event type`,
        `Use one of ${known.join(", ")}.`,
      );
    }
    if (seen.has(v)) throw invalidInput(`${location}/${i}`, `'${v}' is named twice`);
    seen.add(v);
  });
  return [...values];
}

export function descriptionOf(value: string, location = "/description"): string {
  if (value.length > MAX_DESCRIPTION_LENGTH) {
    throw invalidInput(
      location,
      `description must be at most ${MAX_DESCRIPTION_LENGTH} characters, got ${value.length}`,
    );
  }
  return value;
}

export function statusOf(value: string): DeliveryStatus | undefined {
  if (value === "") return undefined;
  if (value === "pending" || value === "delivered" || value === "failed") return value;
  throw invalidInput("/status", `status must be pending, delivered or failed, got '${value}'`);
}

/** The page asked for, fetching one more than the limit to tell whether there is more. */
export function pageOf(page: PageRequest | undefined): { limit: number; after: string | undefined } {
  const limit = page?.limit || DEFAULT_PAGE_SIZE;
  if (limit < 1 || limit > 100) throw invalidInput("/limit", `limit must be 1 to 100, got ${limit}`);
  const cursor = page?.cursor ?? "";
  if (cursor.length > 1024) throw invalidInput("/cursor", "cursor must be at most 1024 characters");
  return { limit, after: cursor === "" ? undefined : cursor };
}

/** The first `limit` items and whether more follow; `rows` holds up to limit + 1. */
export function pageResult<T>(rows: T[], limit: number, cursorOf: (item: T) => string) {
  const items = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return { items, hasMore, cursor: hasMore ? cursorOf(items[items.length - 1]!) : "" };
}
