import { VerifyCode, type VerifyKeyResponse } from "@latchkey/proto/keys/v1/keys_pb";
import type { Policy } from "./policy.ts";

/** What forward-auth answers the proxy: a status, headers and a small JSON body. */
export interface Decision {
  status: number;
  /** VALID, a verification's code, MISSING_KEY or NO_POLICY. */
  code: string;
  headers: Record<string, string>;
  body: string;
}

const CODE_NAMES: Record<VerifyCode, string> = {
  [VerifyCode.UNSPECIFIED]: "NOT_FOUND",
  [VerifyCode.VALID]: "VALID",
  [VerifyCode.NOT_FOUND]: "NOT_FOUND",
  [VerifyCode.FORBIDDEN]: "FORBIDDEN",
  [VerifyCode.INSUFFICIENT_PERMISSIONS]: "INSUFFICIENT_PERMISSIONS",
  [VerifyCode.USAGE_EXCEEDED]: "USAGE_EXCEEDED",
  [VerifyCode.RATE_LIMITED]: "RATE_LIMITED",
  [VerifyCode.DISABLED]: "DISABLED",
  [VerifyCode.EXPIRED]: "EXPIRED",
  [VerifyCode.FORBIDDEN_IP]: "FORBIDDEN_IP",
};

/**
 * The status of each refusal (docs/edge.md, How refusals reach clients). USAGE_EXCEEDED is 403:
 * spent credits come back only when topped up or refilled, so it is no transient condition to
 * retry, which 429 tells clients it is; 402 is reserved and clients do not act on it.
 */
const STATUS: Record<VerifyCode, number> = {
  [VerifyCode.UNSPECIFIED]: 401,
  [VerifyCode.VALID]: 200,
  [VerifyCode.NOT_FOUND]: 401,
  [VerifyCode.FORBIDDEN]: 403,
  [VerifyCode.INSUFFICIENT_PERMISSIONS]: 403,
  [VerifyCode.USAGE_EXCEEDED]: 403,
  [VerifyCode.RATE_LIMITED]: 429,
  [VerifyCode.DISABLED]: 403,
  [VerifyCode.EXPIRED]: 403,
  [VerifyCode.FORBIDDEN_IP]: 403,
};

const MESSAGES: Record<string, string> = {
  VALID: "The key is valid.",
  MISSING_KEY: "No API key was sent.",
  NOT_FOUND: "The API key is not valid.",
  FORBIDDEN: "The API key may not be used here.",
  INSUFFICIENT_PERMISSIONS: "The API key lacks the permissions this request needs.",
  USAGE_EXCEEDED: "The API key has no credits left.",
  RATE_LIMITED: "Too many requests: the API key's rate limit is reached.",
  DISABLED: "The API key is disabled.",
  FORBIDDEN_IP: "The API key may not be used from this address.",
  EXPIRED: "The API key has expired.",
  NO_POLICY: "No policy covers this request.",
};

/** The 401 of a request without a key, or a dry run's allowance of it. */
export function missingKey(policy: Policy, requestId: string): Decision {
  const d = refusal(401, "MISSING_KEY", policy, requestId);
  d.headers["www-authenticate"] = challenge(policy, false);
  return policy.dryRun ? dryRun(d) : d;
}

/** A request no policy covers, and no default: refused, since nothing says how to verify it. */
export function noPolicy(requestId: string): Decision {
  const text = body("NO_POLICY", undefined, requestId);
  return {
    status: 403,
    code: "NO_POLICY",
    headers: { "x-latchkey-request-id": requestId, "x-latchkey-answer": text },
    body: text,
  };
}

/**
 * The answer to a verification. Allowed: the upstream's headers (the key, and what the policy
 * chose: the identity, meta fields, credits) and the rate limits in the IETF draft's fields.
 */
export function decide(
  r: VerifyKeyResponse,
  policy: Policy,
  requestId: string,
  authorization: string | undefined,
  nowMs: number,
): Decision {
  const code = CODE_NAMES[r.code] ?? "NOT_FOUND";
  const status = r.valid ? 200 : (STATUS[r.code] ?? 401);
  let d: Decision;
  if (status === 200) {
    d = {
      status,
      code,
      headers: { "x-latchkey-request-id": requestId, "x-latchkey-policy": policy.name },
      body: body(code, policy, requestId),
    };
  } else {
    d = refusal(status, code, policy, requestId);
    if (status === 401) d.headers["www-authenticate"] = challenge(policy, true);
  }
  rateLimitFields(d.headers, r, nowMs, status === 429);
  if (status === 200 || policy.dryRun) upstreamFields(d.headers, r, policy, authorization);
  return policy.dryRun && status !== 200 ? dryRun(d) : d;
}

/**
 * A refusal; its body rides in x-latchkey-answer too, for nginx, whose auth_request drops the
 * body (deploy/edge/nginx.conf.template answers it from there).
 */
function refusal(status: number, code: string, policy: Policy, requestId: string): Decision {
  const text = body(code, policy, requestId);
  return {
    status,
    code,
    headers: {
      "x-latchkey-request-id": requestId,
      "x-latchkey-policy": policy.name,
      "x-latchkey-answer": text,
    },
    body: text,
  };
}

/** A dry run allows: the verdict goes to the upstream in x-latchkey-dry-run, the body says it too. */
function dryRun(d: Decision): Decision {
  const headers = d.headers;
  delete headers["www-authenticate"];
  delete headers["retry-after"];
  delete headers["x-latchkey-answer"];
  headers["x-latchkey-dry-run"] = d.code;
  return {
    status: 200,
    code: d.code,
    headers,
    body: `${d.body.slice(0, -1)},"dryRun":true,"wouldAnswer":${d.status}}`,
  };
}

function body(code: string, policy: Policy | undefined, requestId: string): string {
  const policyField = policy === undefined ? "" : `,"policy":${JSON.stringify(policy.name)}`;
  return `{"valid":${code === "VALID"},"code":"${code}","message":${JSON.stringify(MESSAGES[code] ?? code)}${policyField},"requestId":"${requestId}"}`;
}

/** RFC 6750's challenge for a Bearer key; for a key elsewhere, where the client should put it. */
function challenge(policy: Policy, sent: boolean): string {
  const key = policy.key;
  const error = sent ? ', error="invalid_token"' : "";
  if (key === undefined || key.from === "bearer") return `Bearer realm="latchkey"${error}`;
  return `ApiKey realm="latchkey", in="${key.from}", name="${key.name}"${error}`;
}

/**
 * The rate limits checked, as draft-ietf-httpapi-ratelimit-headers-10 writes them (structured
 * fields): `RateLimit-Policy: "name";q=<quota>;w=<window s>` and `RateLimit: "name";r=<remaining>;t=<s
 * to reset>`, one list member per limit; a 429 also carries Retry-After, the longest wait of those
 * exceeded.
 */
function rateLimitFields(
  headers: Record<string, string>,
  r: VerifyKeyResponse,
  nowMs: number,
  limited: boolean,
): void {
  if (r.ratelimits.length === 0) return;
  let policies = "";
  let limits = "";
  let retry = 0;
  for (const l of r.ratelimits) {
    const name = sfString(l.name);
    const window = Math.max(1, Math.ceil(Number(l.duration) / 1000));
    const reset = Math.max(0, Math.ceil((Number(l.reset) - nowMs) / 1000));
    policies += `${policies === "" ? "" : ", "}${name};q=${Number(l.limit)};w=${window}`;
    limits += `${limits === "" ? "" : ", "}${name};r=${Math.max(0, Number(l.remaining))};t=${reset}`;
    if (l.exceeded) retry = Math.max(retry, reset, 1);
  }
  headers["ratelimit-policy"] = policies;
  headers.ratelimit = limits;
  if (limited) headers["retry-after"] = String(Math.max(retry, 1));
}

/** A structured-field string: printable ASCII, `"` and `\` escaped; anything else dropped. */
function sfString(s: string): string {
  return `"${s.replace(/[^\x20-\x7e]/g, "").replace(/["\\]/g, "\\$&")}"`;
}

function upstreamFields(
  headers: Record<string, string>,
  r: VerifyKeyResponse,
  policy: Policy,
  authorization: string | undefined,
): void {
  if (r.keyId !== undefined) headers["x-latchkey-key-id"] = r.keyId;
  const up = policy.upstream;
  if (up?.identity && r.identity !== undefined)
    headers["x-latchkey-identity"] = headerValue(r.identity.externalId);
  if (up?.credits && r.credits !== undefined) headers["x-latchkey-credits"] = String(r.credits);
  if (up?.meta !== undefined && up.meta.length > 0 && r.metaJson !== undefined) {
    let meta: Record<string, unknown> | undefined;
    try {
      meta = JSON.parse(r.metaJson) as Record<string, unknown>;
    } catch {
      meta = undefined;
    }
    for (const field of up.meta) {
      const value = meta?.[field];
      if (value === undefined || value === null) continue;
      headers[`x-latchkey-meta-${field.toLowerCase()}`] = headerValue(
        typeof value === "string" ? value : JSON.stringify(value),
      );
    }
  }
  // What the proxy forwards as Authorization (deploy/edge): the client's own, or nothing when the
  // policy strips a Bearer key. Always sent, so the proxy never forwards a value of its own making.
  const bearer = policy.key === undefined || policy.key.from === "bearer";
  headers["x-latchkey-authorization"] = policy.stripKey && bearer ? "" : (authorization ?? "");
  if (policy.stripKey && policy.key?.from === "header") headers["x-latchkey-strip-header"] = policy.key.name!;
}

/** A header value of visible ASCII and spaces; anything else percent-encoded, as a URI component. */
function headerValue(s: string): string {
  return /^[\x20-\x7e]*$/.test(s) ? s : encodeURIComponent(s);
}
