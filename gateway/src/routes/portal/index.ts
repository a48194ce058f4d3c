import type { Route } from "../../route.ts";
import { createKey } from "./createKey.ts";
import { createSession } from "./createSession.ts";
import { endSession } from "./endSession.ts";
import { exchangeCode } from "./exchangeCode.ts";
import { getSession } from "./getSession.ts";
import { getVerifications } from "./getVerifications.ts";
import { listKeys } from "./listKeys.ts";
import { rerollKey } from "./rerollKey.ts";

/**
 * Unkey's portal session flow (createSession with a root key, exchangeCode with the code, the rest
 * with the session's cookie) and Latchkey's additions to it (getSession, createKey, endSession).
 */
export const portalRoutes = {
  "portal.createSession": createSession,
  "portal.exchangeCode": exchangeCode,
  "portal.getSession": getSession,
  "portal.listKeys": listKeys,
  "portal.createKey": createKey,
  "portal.rerollKey": rerollKey,
  "portal.getVerifications": getVerifications,
  "portal.endSession": endSession,
} satisfies Record<`portal.${string}`, Route>;
