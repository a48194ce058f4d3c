import type { MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import {
  Granularity,
  type VerificationBucket,
  VerificationBucketSchema,
} from "@latchkey/proto/analytics/v1/analytics_pb";
import type {
  GetVerificationsRequest,
  GetVerificationsResponseSchema,
} from "@latchkey/proto/portal/v1/portal_pb";
import { invalidInput } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { liveSession, requireScope, sessionCaller } from "../session.ts";
import { ownedKey } from "./owned.ts";

const HOUR = 3_600_000;
const DAY = 86_400_000;
/** The longest window, and the longest answered in hours (docs/limits.md). */
export const MAX_WINDOW_MS = 90 * DAY;
export const HOURLY_UP_TO_MS = 7 * DAY;

/**
 * portal.getVerifications: the end user's verifications in the portal's API (its externalId's,
 * or one of its own keys'), every bucket of the window present, zeros where nothing happened.
 */
export function getVerifications(deps: PortalDeps) {
  return async (
    req: GetVerificationsRequest,
  ): Promise<MessageInitShape<typeof GetVerificationsResponseSchema>> => {
    const s = await liveSession(deps, req.auth);
    requireScope(s, "analytics:read");
    const start = Number(req.startTime);
    const end = Number(req.endTime);
    if (start < 0) throw invalidInput("/startTime", "startTime must be a unix ms time, 0 or later.");
    if (end <= start) throw invalidInput("/endTime", "endTime must be after startTime.");
    if (end - start > MAX_WINDOW_MS) {
      throw invalidInput("/endTime", "The window may span at most 90 days.", "Shorten the window.");
    }
    if (req.keyId !== undefined) await ownedKey(deps, s, req.keyId);
    const hourly = end - start <= HOURLY_UP_TO_MS;
    const step = hourly ? HOUR : DAY;
    const first = Math.floor(start / step) * step;
    const res = await deps.analytics.getVerifications({
      caller: sessionCaller(s, ["read_analytics"]),
      start: BigInt(first),
      end: BigInt(end),
      apiId: s.portal.apiId,
      identity: s.session.externalId,
      ...(req.keyId !== undefined ? { keyId: req.keyId } : {}),
      granularity: hourly ? Granularity.HOUR : Granularity.DAY,
    });
    const byTime = new Map<number, VerificationBucket>(res.buckets.map((b) => [Number(b.time), b]));
    const buckets: VerificationBucket[] = [];
    for (let t = first; t < end; t += step) {
      buckets.push(byTime.get(t) ?? create(VerificationBucketSchema, { time: BigInt(t) }));
    }
    return { buckets };
  };
}
