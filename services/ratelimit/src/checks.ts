import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { LimitResult } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { domainError, ErrorReason } from "@latchkey/runtime";
import type { RatelimitDeps } from "./deps.ts";
import type { CounterCheck, CounterOutcome } from "./limiter/sliding-windows.ts";
import { mayOnNamespace, NAMESPACE_ID_PREFIX, namespaceForbidden } from "./namespaces.ts";
import { OverrideSet } from "./overrides.ts";
import type { Namespace } from "./store/ratelimit-store.ts";
import type { ValidCheck } from "./validate.ts";

/** A check whose namespace, permissions and override are settled: only counting remains. */
export interface ResolvedCheck {
  check: ValidCheck;
  namespace: Namespace;
  counter: CounterCheck;
  overrideId: string | undefined;
}

const SEP = "\u001f";

/** The counter of one identifier: workspace, namespace id and identifier (the duration completes it). */
export const counterKey = (workspaceId: string, namespaceId: string, identifier: string) =>
  workspaceId + SEP + namespaceId + SEP + identifier;

/**
 * mayOnNamespace remembered per caller object: the items of a LimitBatch share
 * their caller, so its permissions are matched once per namespace and action,
 * not once per check. Callers are decoded per call, so nothing outlives it.
 */
const decided = new WeakMap<Caller, Map<string, Map<string, boolean>>>();
function may(caller: Caller, namespaceId: string, action: string): boolean {
  // Nested maps rather than one joined key: both strings are already hashed, a joined one never is.
  let byAction = decided.get(caller);
  if (byAction === undefined) {
    byAction = new Map();
    decided.set(caller, byAction);
  }
  let byNamespace = byAction.get(action);
  if (byNamespace === undefined) {
    byNamespace = new Map();
    byAction.set(action, byNamespace);
  }
  let yes = byNamespace.get(namespaceId);
  if (yes === undefined) {
    yes = mayOnNamespace(caller, namespaceId, action);
    byNamespace.set(namespaceId, yes);
  }
  return yes;
}

/**
 * The namespace a limit check counts in. An unknown name is created on first
 * use, which takes ratelimit.*.create_namespace besides ratelimit.*.limit; an
 * unknown rlns_ id is never created.
 */
async function namespaceForLimit(deps: RatelimitDeps, caller: Caller, ref: string): Promise<Namespace> {
  const ns = await deps.namespaces.find(caller.workspaceId, ref);
  if (ns) {
    if (!may(caller, ns.id, "limit")) throw namespaceForbidden("limit");
    return ns;
  }
  if (!may(caller, "*", "limit")) throw namespaceForbidden("limit");
  if (ref.startsWith(NAMESPACE_ID_PREFIX)) {
    throw domainError(ErrorReason.NAMESPACE_NOT_FOUND, `The namespace '${ref}' does not exist.`);
  }
  if (!may(caller, "*", "create_namespace")) {
    throw domainError(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      `The namespace '${ref}' does not exist yet, and creating it on first use takes the permission 'ratelimit.*.create_namespace'.`,
    );
  }
  return deps.namespaces.create(caller.workspaceId, ref);
}

function resolved(
  caller: Caller,
  check: ValidCheck,
  namespace: Namespace,
  overrides: OverrideSet,
): ResolvedCheck {
  const override = overrides.match(check.identifier);
  return {
    check,
    namespace,
    counter: {
      key: counterKey(caller.workspaceId, namespace.id, check.identifier),
      limit: override === undefined ? check.limit : override.limit,
      duration: override === undefined ? check.duration : override.duration,
      cost: check.cost,
    },
    overrideId: override?.id,
  };
}

/**
 * The check resolved without waiting, when its namespace and the namespace's
 * overrides are cached (the steady state); undefined when something must be
 * loaded first. Throws as resolveCheck would.
 */
export function resolveCheckNow(
  deps: RatelimitDeps,
  caller: Caller,
  check: ValidCheck,
  last?: LastNamespace,
): ResolvedCheck | undefined {
  if (last !== undefined && last.caller === caller && last.ref === check.namespace) {
    return resolved(caller, check, last.namespace, last.overrides);
  }
  const namespace = deps.namespaces.peek(caller.workspaceId, check.namespace);
  if (namespace === undefined) return undefined;
  if (!may(caller, namespace.id, "limit")) throw namespaceForbidden("limit");
  const overrides = deps.overrides.peek(namespace.id);
  if (overrides === undefined) return undefined;
  if (last !== undefined) {
    last.caller = caller;
    last.ref = check.namespace;
    last.namespace = namespace;
    last.overrides = overrides;
  }
  return resolved(caller, check, namespace, overrides);
}

/**
 * The namespace and overrides the previous item of a batch resolved, with the
 * caller and reference that found them (permission included): the next item
 * naming the same ones, the usual case, skips the cache lookups. Lives for one
 * synchronous pass over a batch, so nothing it holds can change meanwhile.
 */
export interface LastNamespace {
  caller: Caller | undefined;
  ref: string;
  namespace: Namespace;
  overrides: OverrideSet;
}

export const noLastNamespace = (): LastNamespace => ({
  caller: undefined,
  ref: "",
  namespace: undefined as unknown as Namespace,
  overrides: OverrideSet.EMPTY,
});

export async function resolveCheck(
  deps: RatelimitDeps,
  caller: Caller,
  check: ValidCheck,
): Promise<ResolvedCheck> {
  const now = resolveCheckNow(deps, caller, check);
  if (now !== undefined) return now;
  const namespace = await namespaceForLimit(deps, caller, check.namespace);
  return resolved(caller, check, namespace, await deps.overrides.get(namespace.id));
}

/**
 * Written as a literal, not with create(): once per check, on the hot path, and
 * every field is set. `echo: false` leaves namespace and identifier empty for a
 * caller that knows them (LimitBatch): two strings fewer to encode and decode.
 */
export function limitResult(resolved: ResolvedCheck, outcome: CounterOutcome, echo = true): LimitResult {
  return {
    $typeName: "ratelimit.v1.LimitResult",
    namespace: echo ? resolved.check.namespace : "",
    identifier: echo ? resolved.check.identifier : "",
    success: outcome.success,
    limit: BigInt(outcome.limit),
    remaining: BigInt(outcome.remaining),
    reset: BigInt(outcome.reset),
    overrideId: resolved.overrideId,
  };
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
    $typeName: "ratelimit.v1.RatelimitChecked",
    requestId,
    index,
    time: BigInt(deps.clock.now()),
    workspaceId: resolved.namespace.workspaceId,
    namespaceId: resolved.namespace.id,
    identifier: resolved.check.identifier,
    passed: outcome.success,
    limit: BigInt(outcome.limit),
    remaining: BigInt(outcome.remaining),
    reset: BigInt(outcome.reset),
    cost: BigInt(resolved.check.cost),
    overrideId: resolved.overrideId ?? "",
    latency: performance.now() - started,
    count: 0,
  });
}
