import { auditSuccess, DOMAIN_EVENT, domainEvent, domainEventId, hashKey } from "@latchkey/runtime";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChanged } from "../events.ts";
import type { LeakTarget } from "../store/keys-store.ts";

/** Where a leak report came from: GitHub's secret scanning, or keys.reportLeak. */
export type LeakSource = "github" | "report";

/** The audit operation each source's detections are recorded under. */
const OPERATION: Record<LeakSource, string> = {
  github: "keys.githubLeakReport",
  report: "keys.reportLeak",
};

/**
 * Most keys one reported string is acted on: a hash is unique per workspace, not across them, so
 * one string may be a key in several (an imported hash); past this the rest are left (docs/limits.md).
 */
export const MAX_LEAK_TARGETS = 100;

/**
 * A key string was reported leaked: every live key with its hash, in whatever workspace (that is
 * the point: the reporter knows no workspace), is revoked (disabled) or flagged as its API's
 * leakPolicy says. The first detection of each key records it with its audit record in one
 * conditional update, so replicas and repeated reports act on a key once; only that one publishes
 * `key.leaked` and drops the key from every instance's cache. Answers the keys the string is.
 */
export async function leakReported(
  deps: KeysDeps,
  hash: string,
  source: LeakSource,
  url: string,
): Promise<LeakTarget[]> {
  const targets = (await deps.store.findLeakTargets(hash)).slice(0, MAX_LEAK_TARGETS);
  for (const target of targets) {
    if (target.leakedAt !== null) continue;
    const revoke = target.leakPolicy === "revoke";
    const now = deps.clock.now();
    const audit = auditSuccess(
      "system",
      target.workspaceId,
      OPERATION[source],
      [keyResource(target.id), apiResource(target.apiId)],
      [revoke ? "revoked" : "flagged"],
      now,
    );
    if (!(await deps.store.markLeaked(target.id, now, revoke, audit))) continue;
    // One event per key, whichever replica or report got there: its repeats carry the same id.
    const event = domainEvent(
      "key.leaked",
      target.workspaceId,
      { keyId: target.id, apiId: target.apiId, source, action: revoke ? "revoked" : "flagged", url },
      now,
      domainEventId("key.leaked", target.id),
    );
    deps.events.publish(DOMAIN_EVENT, event.id, event);
    deps.log.warn(
      { workspaceId: target.workspaceId, keyId: target.id, apiId: target.apiId, source, revoked: revoke },
      "a key was reported leaked",
    );
    await keyChanged(deps, {
      workspaceId: target.workspaceId,
      hash: target.hash,
      keyId: target.id,
      apiId: target.apiId,
    });
  }
  return targets;
}

/** leakReported for a key string: only its hash is looked up, and the string goes nowhere else. */
export function keyStringReported(
  deps: KeysDeps,
  key: string,
  source: LeakSource,
  url: string,
): Promise<LeakTarget[]> {
  return leakReported(deps, hashKey(key), source, url);
}
