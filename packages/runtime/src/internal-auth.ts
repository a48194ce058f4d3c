import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor, type Transport } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";
import { Counter } from "prom-client";
import { env } from "./config.ts";

/**
 * The trust boundary between Latchkey's processes. A service acts for the caller written in the
 * request (`common.v1.Caller`: workspace, root key, permissions); only the gateway resolves callers,
 * from root keys. So that a process that merely reaches a service's port cannot write a caller of
 * its choosing, every call between Latchkey's processes carries a short-lived assertion, signed with
 * a secret they share, over the method and every caller the request carries; a service checks it
 * before it reads anything else of the request.
 *
 * The header, one per call (a batch is one call, signed once):
 *
 *     latchkey-internal-auth: v1.<expiry, unix seconds>.<base64url HMAC-SHA-256>
 *
 * over the UTF-8 of "v1\n<expiry>\n/<service>/<Method>\n<callers>", where <callers> is the JSON
 * array of [workspaceId, rootKeyId, permissions] of the message's `caller` (when set) followed by
 * those of its `callers` (batches), `[]` for a message with neither; a caller with a requestId
 * (management calls, for their audit record) has it as a fourth element, so the hot path's
 * callers, which carry none, are signed as before. The path binds the assertion
 * to one method, the callers to one identity, the expiry to a minute; the rest of the body is not
 * covered (the callers are what a service trusts; everything else it validates).
 */
export const INTERNAL_AUTH_HEADER = "latchkey-internal-auth";

const VERSION = "v1";
/** Shortest secret accepted, in characters: `openssl rand -base64 32` writes 44. */
export const MIN_SECRET_LENGTH = 32;
/** How long an assertion is valid after it is made. */
const TTL_SECONDS = 60;
/** How far the clocks of two processes may disagree, either way, before calls are refused. */
const SKEW_SECONDS = 30;
/** An HMAC-SHA-256 in unpadded base64url. */
const MAC_LENGTH = 43;
/**
 * How long a process sends the same assertion again for the same method and callers (the gateway's
 * batches mostly carry one root key's caller; keys' CheckNamedLimits none), so that the sender
 * pays an HMAC every REUSE_MS per (method, callers) rather than one per call. Well inside the
 * TTL: a reused assertion still has 45 s to live. The receiver checks every call.
 */
const REUSE_MS = 15_000;
/** Assertions kept for reuse, by method and callers; the least recently used is dropped beyond this. */
const REUSED_MAX = 1_000;

const WHAT =
  "the secret shared by the gateway and the services that signs every call between them " +
  `(at least ${MIN_SECRET_LENGTH} characters, e.g. openssl rand -base64 32; several, comma-separated, while rotating)`;

/** Why a call was refused, as counted in latchkey_rpc_refused_total. */
export type RefusalReason = "missing" | "malformed" | "expired" | "mismatch";

const refusals = new Counter({
  name: "latchkey_rpc_refused_total",
  help: "RPCs refused because the gateway did not vouch for them (no, a malformed, an expired or a wrong latchkey-internal-auth)",
  labelNames: ["reason"] as const,
});

/** The fields of common.v1.Caller a signature covers; internal-auth.test.ts fails when Caller gains one. */
interface CallerLike {
  workspaceId?: string;
  rootKeyId?: string;
  permissions?: readonly string[];
  requestId?: string;
}

/** A request message, or the init shape of one: only its callers matter here. */
interface WithCallers {
  caller?: CallerLike | undefined;
  callers?: readonly CallerLike[] | undefined;
}

const tuple = (c: CallerLike) =>
  c.requestId
    ? [c.workspaceId ?? "", c.rootKeyId ?? "", c.permissions ?? [], c.requestId]
    : [c.workspaceId ?? "", c.rootKeyId ?? "", c.permissions ?? []];

/** The canonical text of every caller `message` carries: what a signature vouches for. */
export function callersText(message: unknown): string {
  const m = message as WithCallers | undefined;
  const caller = m?.caller;
  const callers = m?.callers;
  if (caller == null && (callers == null || callers.length === 0)) return "[]";
  const all = caller == null ? [] : [tuple(caller)];
  if (callers != null) for (const c of callers) all.push(tuple(c));
  return JSON.stringify(all);
}

/** A method's Connect path, "/<service>/<Method>". */
export const pathOf = (method: DescMethod): string => `/${method.parent.typeName}/${method.name}`;

function refused(reason: RefusalReason): ConnectError {
  refusals.inc({ reason });
  const why = {
    missing: "carries no",
    malformed: "carries a malformed",
    expired: "carries an expired (or, with clocks apart, a future)",
    mismatch: "carries a wrong",
  }[reason];
  return new ConnectError(
    `this call ${why} ${INTERNAL_AUTH_HEADER}: only Latchkey's own processes, sharing LATCHKEY_INTERNAL_SECRET, may call a service`,
    Code.Unauthenticated,
  );
}

/** An assertion whose form and expiry are right; its MAC is still to be checked against the request. */
export interface OpenedAssertion {
  readonly expiry: string;
  readonly mac: Buffer;
}

/**
 * Signs calls with the first of its secrets and accepts calls signed with any of them, so a secret
 * can be rotated without downtime: add the new one second everywhere, then move it first, then drop
 * the old one. The secrets are held as key objects only, never as text, so no log can show them.
 */
export class InternalAuth {
  private readonly keys: KeyObject[];
  /** Assertions made, by "<path>\n<callers>": what sign() sends again until `renewAt`. */
  private readonly made = new LRUCache<string, { header: string; renewAt: number }>({ max: REUSED_MAX });

  /** `now`: the clock, in milliseconds (tests move it). */
  constructor(
    secrets: readonly string[],
    private readonly now: () => number = Date.now,
  ) {
    if (secrets.length === 0) throw new Error(`LATCHKEY_INTERNAL_SECRET is required: ${WHAT}`);
    secrets.forEach((s, i) => {
      if (s.length < MIN_SECRET_LENGTH) {
        throw new Error(
          `LATCHKEY_INTERNAL_SECRET: secret ${i + 1} has ${s.length} characters, fewer than ${MIN_SECRET_LENGTH}: ${WHAT}`,
        );
      }
    });
    this.keys = secrets.map((s) => createSecretKey(Buffer.from(s, "utf8")));
  }

  /** From LATCHKEY_INTERNAL_SECRET; throws, naming it and saying what it must be, when it is missing or short. */
  static fromEnv(): InternalAuth {
    let text: string;
    try {
      text = env.required("LATCHKEY_INTERNAL_SECRET");
    } catch {
      throw new Error(`LATCHKEY_INTERNAL_SECRET is required: ${WHAT}`);
    }
    return new InternalAuth(
      text
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    );
  }

  /** The header value vouching for a call of `path` carrying `message`'s callers. */
  sign(path: string, message: unknown): string {
    const callers = callersText(message);
    const now = this.now();
    // A caller with a request id (a management call) is never sent again: its assertion is not
    // kept, so a run of them does not push out the ones the hot path reuses.
    if ((message as WithCallers | undefined)?.caller?.requestId) return this.make(now, path, callers);
    const key = `${path}\n${callers}`;
    const made = this.made.get(key);
    if (made !== undefined && now < made.renewAt) return made.header;
    const header = this.make(now, path, callers);
    this.made.set(key, { header, renewAt: now + REUSE_MS });
    return header;
  }

  private make(now: number, path: string, callers: string): string {
    const expiry = String(Math.floor(now / 1000) + TTL_SECONDS);
    return `${VERSION}.${expiry}.${this.mac(this.keys[0]!, expiry, path, callers).toString("base64url")}`;
  }

  /**
   * Checks the header's form and expiry, which need nothing of the body: a call refused here is
   * refused before its body is read. Throws Unauthenticated.
   */
  open(header: string | undefined): OpenedAssertion {
    if (header === undefined || header === "") throw refused("missing");
    const dot = header.indexOf(".", VERSION.length + 1);
    if (!header.startsWith(`${VERSION}.`) || dot === -1 || header.length - dot - 1 !== MAC_LENGTH) {
      throw refused("malformed");
    }
    const expiry = header.slice(VERSION.length + 1, dot);
    if (!/^[0-9]{1,12}$/.test(expiry)) throw refused("malformed");
    const seconds = Number(expiry);
    const now = this.now() / 1000;
    if (seconds < now - SKEW_SECONDS || seconds > now + TTL_SECONDS + SKEW_SECONDS) throw refused("expired");
    const mac = Buffer.from(header.slice(dot + 1), "base64url");
    if (mac.length !== 32) throw refused("malformed");
    return { expiry, mac };
  }

  /** Checks that `assertion` was made by a holder of a secret for `path` and `message`'s callers. Throws Unauthenticated. */
  verify(assertion: OpenedAssertion, path: string, message: unknown): void {
    const callers = callersText(message);
    let ok = false;
    for (const key of this.keys) {
      // Every secret is tried: which one matched says nothing an attacker could use, but the time
      // taken then does not depend on it either.
      if (timingSafeEqual(this.mac(key, assertion.expiry, path, callers), assertion.mac)) ok = true;
    }
    if (!ok) throw refused("mismatch");
  }

  /** open() and verify() at once, for a request already read. */
  check(path: string, header: string | undefined, message: unknown): void {
    this.verify(this.open(header), path, message);
  }

  private mac(key: KeyObject, expiry: string, path: string, callers: string): Buffer {
    return createHmac("sha256", key).update(`${VERSION}\n${expiry}\n${path}\n${callers}`).digest();
  }

  /** Never the secrets, whatever logs this object. */
  toJSON(): string {
    return "[InternalAuth]";
  }
}

/**
 * Signs every call through `transport` (unless `auth` is "none", for tests of services served
 * without it) and gives a call without a deadline `timeoutMs`. internalTransport wraps its
 * transports in this. Streams are not passed on: Latchkey serves none, and its services refuse them.
 */
export function signedTransport(
  transport: Transport,
  auth: InternalAuth | "none",
  timeoutMs?: number,
): Transport {
  return {
    unary(method, signal, timeout, header, input, contextValues) {
      return transport.unary(
        method,
        signal,
        timeout ?? timeoutMs,
        auth === "none" ? header : withHeader(header, auth.sign(pathOf(method), input)),
        input,
        contextValues,
      );
    },
    stream: () =>
      Promise.reject(new ConnectError("Latchkey's services serve no streaming calls", Code.Unimplemented)),
  };
}

type HeadersInit_ = Parameters<Transport["unary"]>[3];

/** The call's headers with the assertion: a plain record when there were none (the common case, cheapest to copy). */
function withHeader(header: HeadersInit_, value: string): HeadersInit_ {
  if (header === undefined) return { [INTERNAL_AUTH_HEADER]: value };
  const headers = new Headers(header);
  headers.set(INTERNAL_AUTH_HEADER, value);
  return headers;
}

/**
 * For a stock Connect client (createClient with connect-node's transports): signs each unary call,
 * so tools inside the cluster that hold the secret can call a service directly.
 */
export function signingInterceptor(auth: InternalAuth): Interceptor {
  return (next) => (req) => {
    if (!req.stream) req.header.set(INTERNAL_AUTH_HEADER, auth.sign(pathOf(req.method), req.message));
    return next(req);
  };
}

/**
 * The server's side for every call connect's adapter serves (gRPC, gRPC-Web, Connect JSON, Connect
 * with a deadline): first in the chain, so nothing runs for a call the gateway did not vouch for.
 */
export function verifyingInterceptor(auth: InternalAuth): Interceptor {
  return (next) => async (req) => {
    if (req.stream) throw refused("missing");
    auth.check(pathOf(req.method), req.header.get(INTERNAL_AUTH_HEADER) ?? undefined, req.message);
    return next(req);
  };
}
