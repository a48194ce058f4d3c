import http from "node:http";
import https from "node:https";
import { BlockedAddressError, blockedAddress, literalAddress, safeLookup } from "./url-safety.ts";

/** Most bytes of a receiver's answer read (docs/limits.md): only its status matters, the rest is dropped. */
export const MAX_RESPONSE_BYTES = 4096;
/** Most characters of an error's detail kept for the log. */
const MAX_DETAIL_LENGTH = 500;

export interface AttemptResult {
  /** The receiver's status, or null when none came. */
  statusCode: number | null;
  latencyMs: number;
  /**
   * Why the attempt failed, in words the webhook's owner may read (the delivery log,
   * disabledReason), or null when it succeeded (2xx): one of ATTEMPT_ERRORS' forms, never an
   * address a host resolved to or a resolver's or socket's own text.
   */
  error: string | null;
  /** What failed, as node said it (addresses, error codes): for Latchkey's log only. */
  detail?: string;
}

/**
 * What the owner of a webhook is told of a failed attempt. A host that does not resolve and one
 * that resolves to a refused address read the same, so the log is no way to learn which internal
 * names exist or where they point; the detail goes to Latchkey's log.
 */
export const ATTEMPT_ERRORS = {
  invalidUrl: "the URL is not valid",
  scheme: "the URL is not http or https",
  addressNotAllowed: "address not allowed: deliveries go to public addresses only; nothing was sent",
  hostNotAllowed:
    "address not allowed or not found: the host did not resolve to a public address; nothing was sent",
  connect: "could not connect",
  tls: "could not connect: the receiver's TLS certificate was not accepted",
  closed: "the connection closed before an answer",
  timeout: (ms: number) => `timed out after ${ms} ms`,
  status: (code: number) => `status ${code}`,
  redirect: (code: number) => `status ${code}: the answer was a redirect, which is not followed`,
  unsigned: "the attempt could not be signed",
} as const;

/** Node's codes of a failed lookup: the host did not resolve (or the resolver failed). */
const LOOKUP_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NODATA", "EAI_NONAME", "ENODATA"]);

/** The owner's words for a request's error (node:http, net, tls or safeLookup's). */
export function attemptErrorOf(err: NodeJS.ErrnoException): string {
  const code = err.code ?? "";
  if (err instanceof BlockedAddressError || LOOKUP_CODES.has(code)) return ATTEMPT_ERRORS.hostNotAllowed;
  if (
    code.startsWith("ERR_TLS_") ||
    code.startsWith("ERR_SSL_") ||
    code.includes("CERT") ||
    code === "DEPTH_ZERO_SELF_SIGNED_CERT" ||
    code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE"
  ) {
    return ATTEMPT_ERRORS.tls;
  }
  if (code === "ECONNRESET" || code === "EPIPE" || err.message === "socket hang up")
    return ATTEMPT_ERRORS.closed;
  return ATTEMPT_ERRORS.connect;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

/**
 * One POST of `body` to `url`: a 2xx is a success, anything else a failure, a 3xx included
 * (redirects are never followed: the Location could point anywhere, a private address too).
 * The host is resolved by safeLookup, which refuses blocked addresses unless `allowPrivate`;
 * a literal address is judged here, since node connects to it without a lookup. The whole
 * attempt, connecting included, is bounded by `timeoutMs`, and at most MAX_RESPONSE_BYTES of the
 * answer are read.
 */
export function send(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<AttemptResult> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (statusCode: number | null, error: string | null, detail?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({
        statusCode,
        latencyMs: latency(),
        error,
        ...(detail === undefined ? {} : { detail: detail.slice(0, MAX_DETAIL_LENGTH) }),
      });
    };
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return finish(null, ATTEMPT_ERRORS.invalidUrl);
    }
    if (!options.allowPrivate) {
      const literal = literalAddress(target);
      const why = literal === undefined ? undefined : blockedAddress(literal);
      // The owner wrote this address, so saying it is refused tells them nothing new.
      if (why) return finish(null, ATTEMPT_ERRORS.addressNotAllowed, why);
    }
    const client = target.protocol === "https:" ? https : target.protocol === "http:" ? http : undefined;
    if (!client) return finish(null, ATTEMPT_ERRORS.scheme, target.protocol);
    const req = client.request(target, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "user-agent": "Latchkey-Webhooks",
      },
      ...(options.allowPrivate ? {} : { lookup: safeLookup }),
      // A fresh connection per attempt: a pooled one could have been resolved under other rules.
      agent: false,
    });
    timer = setTimeout(() => {
      req.destroy();
      finish(null, ATTEMPT_ERRORS.timeout(options.timeoutMs));
    }, options.timeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) =>
      finish(null, attemptErrorOf(err), [err.code, err.message || String(err)].filter(Boolean).join(": ")),
    );
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      const settle = () => {
        res.destroy();
        if (status >= 200 && status < 300) finish(status, null);
        else if (status >= 300 && status < 400) finish(status, ATTEMPT_ERRORS.redirect(status));
        else finish(status, ATTEMPT_ERRORS.status(status));
      };
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_RESPONSE_BYTES) settle();
      });
      res.on("end", settle);
      res.on("error", settle);
    });
    req.end(body);
  });
}
