import type { Route } from "../route.ts";
import { createApi } from "./apis.createApi.ts";
import { getApi } from "./apis.getApi.ts";
import { createKey } from "./keys.createKey.ts";
import { getKey } from "./keys.getKey.ts";
import { verifyKey } from "./keys.verifyKey.ts";
import { deleteOverride } from "./ratelimits.deleteOverride.ts";
import { getOverride } from "./ratelimits.getOverride.ts";
import { limit } from "./ratelimits.limit.ts";
import { listOverrides, listOverridesUnkey } from "./ratelimits.listOverrides.ts";
import { multiLimit } from "./ratelimits.multiLimit.ts";
import { setOverride } from "./ratelimits.setOverride.ts";

/**
 * Every public operation, served at POST /v2/<operation>. Rate-limit
 * operations answer both at the contract's `ratelimits.` and at Unkey's
 * `ratelimit.`, so Unkey's clients work unchanged.
 */
export const OPERATIONS = [
  "apis.createApi",
  "apis.getApi",
  "keys.createKey",
  "keys.getKey",
  "keys.verifyKey",
  "ratelimits.limit",
  "ratelimits.multiLimit",
  "ratelimits.setOverride",
  "ratelimits.getOverride",
  "ratelimits.listOverrides",
  "ratelimits.deleteOverride",
  "ratelimit.limit",
  "ratelimit.multiLimit",
  "ratelimit.setOverride",
  "ratelimit.getOverride",
  "ratelimit.listOverrides",
  "ratelimit.deleteOverride",
] as const;

export type Operation = (typeof OPERATIONS)[number];

/** The route table: an operation without a route, or a route without an operation, fails to compile. */
export const routes = {
  "apis.createApi": createApi,
  "apis.getApi": getApi,
  "keys.createKey": createKey,
  "keys.getKey": getKey,
  "keys.verifyKey": verifyKey,
  "ratelimits.limit": limit,
  "ratelimits.multiLimit": multiLimit,
  "ratelimits.setOverride": setOverride,
  "ratelimits.getOverride": getOverride,
  "ratelimits.listOverrides": listOverrides,
  "ratelimits.deleteOverride": deleteOverride,
  "ratelimit.limit": limit,
  "ratelimit.multiLimit": multiLimit,
  "ratelimit.setOverride": setOverride,
  "ratelimit.getOverride": getOverride,
  "ratelimit.listOverrides": listOverridesUnkey,
  "ratelimit.deleteOverride": deleteOverride,
} satisfies Record<Operation, Route>;
