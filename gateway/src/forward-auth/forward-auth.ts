import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { VerifyKeyRequest, VerifyKeyResponse } from "@latchkey/proto/keys/v1/keys_pb";
import { type Clock, forwardAuthDecisions, holds, type Logger } from "@latchkey/runtime";
import type { RootKeyAuth } from "../auth.ts";
import type { TrustedProxies } from "../client-address.ts";
import { Problem, problemOf } from "../problem.ts";
import { type Decision, decide, missingKey, noPolicy } from "./answer.ts";
import type { Policy } from "./policy.ts";
import {
  clientAddressOf,
  type Exchange,
  keyOf,
  type OriginalRequest,
  originalRequest,
  ROOT_KEY_HEADER,
} from "./request.ts";
import type { PolicyMatcher } from "./stored-policies.ts";

export type { PolicySource } from "./policy.ts";

export interface ForwardAuthDeps {
  auth: RootKeyAuth;
  /** keys.verifyKey through the gateway's batcher, as the public operation calls it. */
  verifyKey(caller: Caller, request: VerifyKeyRequest): Promise<VerifyKeyResponse>;
  /** The file's and the workspace's stored policies (stored-policies.ts). */
  policies: PolicyMatcher;
  trustedProxies: TrustedProxies;
  clock: Clock;
  log: Logger;
}

const JSON_TYPE = "application/json";

/**
 * The forward-auth endpoint (docs/edge.md): a reverse proxy asks, with its own root key, whether
 * to let a request through; the request's policy says how its key is verified, and the
 * verification is keys.verifyKey's own, batched with the public operation's, so analytics,
 * events, webhooks and audit follow as they do there.
 */
export function createForwardAuth(
  deps: ForwardAuthDeps,
): (x: Exchange, url: string, requestId: string) => void {
  // Per root key and policy: the caller the verification runs as (the proxy's root key narrowed to
  // the policy's API, so a key of another API is unknown), or why the root key may not serve it.
  // Held by the cached caller's identity, so a changed root key starts afresh.
  // Held by policy name, so that policies compiled again after a change replace their entry
  // rather than add to it.
  const narrowed = new WeakMap<Caller, Map<string, { policy: Policy; as: Caller | string }>>();

  function callerFor(caller: Caller, policy: Policy): Caller | string {
    let perPolicy = narrowed.get(caller);
    if (perPolicy === undefined) {
      perPolicy = new Map();
      narrowed.set(caller, perPolicy);
    }
    const held = perPolicy.get(policy.name);
    if (held !== undefined && held.policy === policy) return held.as;
    const own = `forward_auth.${policy.name}.verify`;
    const verify = `api.${policy.apiId}.verify_key`;
    let as: Caller | string;
    if (!holds(caller.permissions, own)) as = `The proxy's root key lacks '${own}'.`;
    else if (!holds(caller.permissions, verify)) as = `The proxy's root key lacks '${verify}'.`;
    else as = { ...caller, permissions: [verify] };
    perPolicy.set(policy.name, { policy, as });
    return as;
  }

  function reply(x: Exchange, d: Decision, dry: boolean, bodyless: boolean) {
    forwardAuthDecisions.inc({ outcome: d.code, dry_run: dry ? "true" : "false" });
    x.reply(d.status, JSON_TYPE, d.status === 200 || bodyless ? "" : d.body, d.headers);
  }

  /** An answer about the proxy itself or Latchkey's state: its body in x-latchkey-answer too, as a refusal's. */
  function trouble(x: Exchange, requestId: string, status: number, code: string, message: string) {
    const body = `{"code":"${code}","message":${JSON.stringify(message)},"requestId":"${requestId}"}`;
    x.reply(status, JSON_TYPE, nginxAsks(x) ? "" : body, {
      "x-latchkey-request-id": requestId,
      "x-latchkey-answer": body,
    });
  }

  /** A proxy without a usable root key: 500, so that no proxy answers its client 401 for it. */
  function misconfigured(x: Exchange, requestId: string, message: string) {
    trouble(x, requestId, 500, "PROXY_MISCONFIGURED", message);
  }

  function failed(x: Exchange, requestId: string, err: unknown) {
    const p =
      err instanceof Problem
        ? err
        : problemOf(err, (cause) => deps.log.error({ err: cause, requestId }, "forward-auth failed"));
    if (p.status === 401)
      return misconfigured(x, requestId, `The proxy's root key is not valid: ${p.detail}`);
    if (p.status === 403) return misconfigured(x, requestId, p.detail);
    trouble(x, requestId, p.status, "UNAVAILABLE", p.detail);
  }

  function verify(x: Exchange, url: string, requestId: string, caller: Caller) {
    const original = originalRequest(x, url);
    const bodyless = nginxAsks(x);
    const found = deps.policies.match(caller, original.method, original.host, original.path);
    // A workspace whose stored policies are not held yet waits for their one load.
    if (found instanceof Promise) {
      found.then(
        (policy) => {
          try {
            enforce(x, requestId, caller, original, bodyless, policy);
          } catch (err) {
            failed(x, requestId, err);
          }
        },
        (err: unknown) => failed(x, requestId, err),
      );
      return;
    }
    enforce(x, requestId, caller, original, bodyless, found);
  }

  function enforce(
    x: Exchange,
    requestId: string,
    caller: Caller,
    original: OriginalRequest,
    bodyless: boolean,
    policy: Policy | undefined,
  ) {
    if (policy === undefined) return reply(x, noPolicy(requestId), false, bodyless);
    const as = callerFor(caller, policy);
    if (typeof as === "string") return misconfigured(x, requestId, as);
    const key = keyOf(x, policy, original);
    if (key === undefined) return reply(x, missingKey(policy, requestId), policy.dryRun === true, bodyless);
    // The client as the proxy reports it. The integrator wires this to the verify request's
    // client-address field (IP allow-lists) once that field exists.
    const clientAddress = clientAddressOf(x, deps.trustedProxies);
    const request = verifyRequest(policy, key, requestId, clientAddress);
    const authorization = x.authorization;
    deps.verifyKey(as, request).then(
      (r) =>
        reply(
          x,
          decide(r, policy, requestId, authorization, deps.clock.now()),
          policy.dryRun === true,
          bodyless,
        ),
      (err: unknown) => failed(x, requestId, err),
    );
  }

  return function forwardAuth(x: Exchange, url: string, requestId: string) {
    const rootKey = x.header!(ROOT_KEY_HEADER);
    if (rootKey === undefined || rootKey === "") {
      return misconfigured(x, requestId, `The proxy sent no root key: set the ${ROOT_KEY_HEADER} header.`);
    }
    const header = `Bearer ${rootKey}`;
    const cached = deps.auth.cached(header);
    try {
      if (cached !== undefined) return verify(x, url, requestId, cached);
      deps.auth.authenticate(header, x).then(
        (caller) => {
          try {
            verify(x, url, requestId, caller);
          } catch (err) {
            failed(x, requestId, err);
          }
        },
        (err: unknown) => failed(x, requestId, err),
      );
    } catch (err) {
      failed(x, requestId, err);
    }
  };
}

/**
 * Whether nginx asks (its convention, X-Original-URI, as deploy/edge sets it). Its auth_request never
 * reads an answer's body and keeps the connection only when there is none; it takes a refusal's
 * body from x-latchkey-answer instead.
 */
function nginxAsks(x: Exchange): boolean {
  return x.header!("x-original-uri") !== undefined;
}

/**
 * keys.verifyKey's request for a policy, as the public operation writes it. `clientAddress` is the
 * client's address as the proxy reports it: the key's and its API's IP allow-lists are checked
 * against it.
 */
function verifyRequest(
  policy: Policy,
  key: string,
  requestId: string,
  clientAddress: string | undefined,
): VerifyKeyRequest {
  return {
    $typeName: "keys.v1.VerifyKeyRequest",
    caller: undefined,
    key,
    cost: policy.cost === undefined ? undefined : BigInt(policy.cost),
    tags: policy.tags ?? [],
    ratelimits:
      policy.ratelimits === undefined
        ? []
        : policy.ratelimits.map((r) => ({
            $typeName: "keys.v1.VerifyRatelimitRequest",
            name: r.name,
            cost: r.cost === undefined ? undefined : BigInt(r.cost),
            limit: r.limit === undefined ? undefined : BigInt(r.limit),
            duration: r.duration === undefined ? undefined : BigInt(r.duration),
          })),
    permissions: policy.permissions,
    migrationId: undefined,
    requestId,
    clientIp: clientAddress,
  };
}
