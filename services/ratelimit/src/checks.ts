import { create } from "@bufbuild/protobuf";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { type LimitResult, LimitResultSchema } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { domainError, ErrorReason } from "@latchkey/runtime";
import type { RatelimitDeps } from "./deps.ts";
import type { CounterCheck, CounterOutcome } from "./limiter/sliding-windows.ts";
import { mayOnNamespace, NAMESPACE_ID_PREFIX, namespaceForbidden } from "./namespaces.ts";
import type { Namespace } from "./store/ratelimit-store.ts";
import type { ValidCheck } from "./validate.ts";

/** A check whose namespace, permissions and override are settled: only counting remains. */
export interface ResolvedCheck {
  check: ValidCheck;
  namespace: Namespace;
  counter: CounterCheck;
  overrideId?: string;
}

const SEP = "\u001f";

/** The counter of one identifier: workspace, namespace id and identifier (the duration completes it). */
export const counterKey = (workspaceId: string, namespaceId: string, identifier: string) =>
  workspaceId + SEP + namespaceId + SEP + identifier;

/**
 * The namespace a limit check counts in. An unknown name is created on first
 * use, which takes ratelimit.*.create_namespace besides ratelimit.*.limit; an
 * unknown rlns_ id is never created.
 */
async function namespaceForLimit(deps: RatelimitDeps, caller: Caller, ref: string): Promise<Namespace> {
  const ns =
    deps.namespaces.peek(caller.workspaceId, ref) ?? (await deps.namespaces.find(caller.workspaceId, ref));
  if (ns) {
    if (!mayOnNamespace(caller, ns.id, "limit")) throw namespaceForbidden("limit");
    return ns;
  }
  if (!mayOnNamespace(caller, "*", "limit")) throw namespaceForbidden("limit");
  if (ref.startsWith(NAMESPACE_ID_PREFIX)) {
    throw domainError(ErrorReason.NAMESPACE_NOT_FOUND, `The namespace '${ref}' does not exist.`);
  }
  if (!mayOnNamespace(caller, "*", "create_namespace")) {
    throw domainError(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      `The namespace '${ref}' does not exist yet, and creating it on first use takes the permission 'ratelimit.*.create_namespace'.`,
    );
  }
  return deps.namespaces.create(caller.workspaceId, ref);
}

export async function resolveCheck(
  deps: RatelimitDeps,
  caller: Caller,
  check: ValidCheck,
): Promise<ResolvedCheck> {
  const namespace = await namespaceForLimit(deps, caller, check.namespace);
  const overrides = deps.overrides.peek(namespace.id) ?? (await deps.overrides.get(namespace.id));
  const override = overrides.match(check.identifier);
  return {
    check,
    namespace,
    counter: {
      key: counterKey(caller.workspaceId, namespace.id, check.identifier),
      limit: override?.limit ?? check.limit,
      duration: override?.duration ?? check.duration,
      cost: check.cost,
    },
    ...(override ? { overrideId: override.id } : {}),
  };
}

export function limitResult(resolved: ResolvedCheck, outcome: CounterOutcome): LimitResult {
  return create(LimitResultSchema, {
    namespace: resolved.check.namespace,
    identifier: resolved.check.identifier,
    success: outcome.success,
    limit: BigInt(outcome.limit),
    remaining: BigInt(outcome.remaining),
    reset: BigInt(outcome.reset),
    ...(resolved.overrideId ? { overrideId: resolved.overrideId } : {}),
  });
}

/** Announces one counted check to analytics, off the request path; `index` is its place in the request. */
export function emitChecked(
  deps: RatelimitDeps,
  requestId: string,
  index: number,
  resolved: ResolvedCheck,
  outcome: CounterOutcome,
  started: number,
): void {
  if (!deps.events.recording) return;
  deps.events.checked({
    requestId,
    index,
    time: deps.clock.now(),
    workspaceId: resolved.namespace.workspaceId,
    namespaceId: resolved.namespace.id,
    identifier: resolved.check.identifier,
    passed: outcome.success,
    limit: outcome.limit,
    remaining: outcome.remaining,
    reset: outcome.reset,
    cost: resolved.check.cost,
    overrideId: resolved.overrideId ?? "",
    latency: performance.now() - started,
  });
}
