import type { RouteContext } from "../../route.ts";

/**
 * What a session call sends the portal service: the cookie's token, and for a change the request's
 * id, for its audit record (reads carry none, as a root key's reads do).
 */
export function sessionAuth(ctx: RouteContext, change: boolean) {
  return { token: ctx.web?.sessionToken ?? "", requestId: change ? ctx.requestId : "" };
}

/** Answers that carry a code or a token, or the end user's keys, are never kept by a cache. */
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const;
