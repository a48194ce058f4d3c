import { rootKey } from "./session.ts";

/** One violation of an invalid request, as the API lists them. */
export interface Violation {
  location: string;
  message: string;
  fix?: string;
}

/** An error answer of the API, kept as it wrote it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly type: string,
    readonly errors: Violation[] = [],
    readonly requestId?: string,
  ) {
    super(detail);
  }
}

export interface Pagination {
  cursor?: string;
  hasMore: boolean;
}

export interface Answer<T> {
  data: T;
  pagination?: Pagination;
}

/** POST /v2/<operation> on the Latchkey that served this page, with the root key of this tab. */
export async function call<T>(operation: string, body: unknown, key = rootKey()): Promise<Answer<T>> {
  let res: Response;
  try {
    res = await fetch(`/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key ?? ""}` },
      body: JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
  } catch (err) {
    throw new ApiError(0, "Network error", `Latchkey did not answer: ${(err as Error).message}`, "network");
  }
  let json: {
    data?: unknown;
    pagination?: Pagination;
    meta?: { requestId?: string };
    error?: { status?: number; title?: string; detail?: string; type?: string; errors?: Violation[] };
  };
  try {
    json = await res.json();
  } catch {
    throw new ApiError(
      res.status,
      res.statusText,
      `Latchkey answered ${res.status} without JSON.`,
      "unknown",
    );
  }
  if (!res.ok || json.error) {
    const e = json.error ?? {};
    throw new ApiError(
      e.status ?? res.status,
      e.title ?? res.statusText,
      e.detail ?? `Latchkey answered ${res.status}.`,
      e.type ?? "unknown",
      e.errors ?? [],
      json.meta?.requestId,
    );
  }
  return { data: json.data as T, pagination: json.pagination };
}

// ---- the shapes the console reads (docs/api.md)

export interface Ratelimit {
  id?: string;
  name: string;
  limit: number;
  duration: number;
  autoApply?: boolean;
}

export interface Credits {
  remaining: number | null;
  refill?: { interval: "daily" | "monthly"; amount: number; refillDay?: number };
}

export interface Permission {
  id: string;
  name: string;
  slug: string;
  description?: string;
}

export interface Role {
  id: string;
  name: string;
  description?: string;
  permissions?: Permission[];
}

export interface Key {
  keyId: string;
  start?: string;
  enabled: boolean;
  name?: string;
  meta?: Record<string, unknown>;
  createdAt: number;
  updatedAt?: number;
  lastUsedAt?: number;
  expires?: number;
  permissions?: string[];
  roles?: string[];
  credits?: Credits;
  identity?: { id: string; externalId: string; ratelimits?: Ratelimit[] };
  ratelimits?: Ratelimit[];
  plaintext?: string;
  /** Latchkey's additions: CIDRs it may be verified from, and when a leak report first named it. */
  ipAllowList?: string[];
  leakedAt?: number;
  /** Latchkey's addition: its own credits.low thresholds in percent; absent: its API's. */
  creditThresholds?: number[];
}

export interface Identity {
  id: string;
  externalId: string;
  meta?: Record<string, unknown>;
  ratelimits?: Ratelimit[];
  ipAllowList?: string[];
}

export interface Override {
  overrideId: string;
  identifier: string;
  limit: number;
  duration: number;
}

export interface Bucket {
  time: number;
  total: number;
  valid: number;
  rateLimited: number;
  usageExceeded: number;
  disabled: number;
  expired: number;
  notFound: number;
  forbidden: number;
  insufficientPermissions: number;
  spentCredits: number;
}

/** One record of the audit log (auditLogs.list): who did what to which resources, and how it ended. */
export interface AuditLog {
  auditLogId: string;
  time: number;
  /** "system": Latchkey itself, as when it disables a webhook whose deliveries kept failing. */
  actor: { type: "root_key" | "cli" | "system"; id: string };
  operation: string;
  resources: { type: string; id: string }[];
  outcome: "success" | "failure";
  error?: { code: string } | null;
  requestId: string;
  fields: string[];
}

export interface Webhook {
  webhookId: string;
  url: string;
  events: string[];
  description?: string;
  enabled: boolean;
  disabledReason?: string | null;
  createdAt: number;
}

export interface DeliveryAttempt {
  attemptedAt: number;
  statusCode?: number | null;
  latencyMs?: number | null;
  error?: string | null;
}

export interface Delivery {
  deliveryId: string;
  eventId: string;
  eventType: string;
  status: "pending" | "delivered" | "failed";
  createdAt: number;
  nextAttemptAt?: number | null;
  deliveredAt?: number | null;
  attempts: DeliveryAttempt[];
}
