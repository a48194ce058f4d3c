import { env } from "@latchkey/runtime";

/** The portal context's bounds; each has its setting in docs/configuration.md and its row in docs/limits.md. */
export interface PortalSettings {
  /** Portals one workspace may have. */
  maxPortalsPerWorkspace: number;
  /** Live sessions (a code not yet used and unexpired, or a token unexpired, neither revoked) one workspace may have. */
  maxLiveSessionsPerWorkspace: number;
  /** How long a session's exchange code may be redeemed: at most 60 s. */
  codeTtlMs: number;
}

export const DEFAULT_SETTINGS: PortalSettings = {
  maxPortalsPerWorkspace: 100,
  maxLiveSessionsPerWorkspace: 10_000,
  codeTtlMs: 60_000,
};

/** A session lasts this long after its exchange unless its portal's sessionTtlMs is shorter. */
export const DEFAULT_SESSION_TTL_MS = 86_400_000;
export const MIN_SESSION_TTL_MS = 60_000;
/** The longest an exchange code may live (PORTAL_CODE_TTL_MS may only shorten it). */
export const MAX_CODE_TTL_MS = 60_000;

/** The settings from env, each defaulting to DEFAULT_SETTINGS. */
export function portalSettingsFromEnv(): PortalSettings {
  const codeTtlMs = env.int("PORTAL_CODE_TTL_MS", 60_000, 1_000);
  if (codeTtlMs > MAX_CODE_TTL_MS) {
    throw new Error(`PORTAL_CODE_TTL_MS must be 1000 to ${MAX_CODE_TTL_MS} ms; got ${codeTtlMs}`);
  }
  return {
    maxPortalsPerWorkspace: env.int("PORTAL_MAX_PER_WORKSPACE", 100, 1),
    maxLiveSessionsPerWorkspace: env.int("PORTAL_MAX_LIVE_SESSIONS_PER_WORKSPACE", 10_000, 1),
    codeTtlMs,
  };
}
