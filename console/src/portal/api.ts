// The portal page's one way to Latchkey: POST /v2/portal.<operation> on the origin that served it. The
// session is the HttpOnly portal_session cookie that portal.exchangeCode set, sent by the browser on
// same-origin requests; the page never sees it, and sends no Authorization header.

/** An error answer of the API, kept as it wrote it (gateway/src/problem.ts). */
export class PortalError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly requestId?: string,
  ) {
    super(detail);
  }
}

export interface Pagination {
  cursor?: string;
  hasMore: boolean;
}

export async function portalCall<T>(
  operation: string,
  body: unknown,
): Promise<{ data: T; pagination?: Pagination }> {
  let res: Response;
  try {
    // Relative: /portal/ calls /v2/…, and behind a proxy that serves Latchkey under a path, that path's /v2/….
    res = await fetch(`../v2/portal.${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch (err) {
    throw new PortalError(0, "Network error", `The server did not answer: ${(err as Error).message}`);
  }
  let json: {
    data?: unknown;
    pagination?: Pagination;
    meta?: { requestId?: string };
    error?: { status?: number; title?: string; detail?: string };
  };
  try {
    json = await res.json();
  } catch {
    throw new PortalError(res.status, res.statusText, `The server answered ${res.status} without JSON.`);
  }
  if (!res.ok || json.error) {
    const e = json.error ?? {};
    throw new PortalError(
      e.status ?? res.status,
      e.title ?? res.statusText,
      e.detail ?? `The server answered ${res.status}.`,
      json.meta?.requestId,
    );
  }
  return { data: json.data as T, pagination: json.pagination };
}

export type Scope = "keys:read" | "keys:create" | "keys:reroll" | "analytics:read";

export interface Session {
  sessionId: string;
  portal: {
    portalId: string;
    name: string;
    branding?: { title?: string; accentColor?: string; logoUrl?: string };
  };
  externalId: string;
  scopes: Scope[];
  returnUrl?: string;
  expiresAt: number;
  preview?: boolean;
}

/** A key as portal.listKeys lists it (apis.listKeys' shape); the page shows these fields only. */
export interface PortalKey {
  keyId: string;
  start?: string;
  name?: string;
  enabled?: boolean;
  createdAt?: number;
  updatedAt?: number;
  lastUsedAt?: number;
  expires?: number;
  credits?: { remaining?: number | null; refill?: { interval: string; amount: number } };
}

/** One bucket of portal.getVerifications' zero-filled series. */
export interface Point {
  time: number;
  total: number;
  valid: number;
  rateLimited: number;
  usageExceeded: number;
  disabled?: number;
  expired?: number;
  forbidden?: number;
  insufficientPermissions?: number;
}
