import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorReason, errorDetailOf, type Violation } from "@latchkey/runtime";

/**
 * The public error body, {meta:{requestId}, error:{title, detail, status, type, errors?}},
 * with `type` a documentation URL in Unkey's spelling so Unkey's clients
 * recognise it (docs/api.md).
 */
export class Problem {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly type: string,
    readonly detail: string,
    readonly errors?: Violation[],
  ) {}
}

const DOCS = "https://unkey.com/docs/errors/";

interface Kind {
  status: number;
  title: string;
  type: string;
}

const kind = (status: number, title: string, path: string): Kind => ({ status, title, type: DOCS + path });

const BAD_REQUEST = kind(400, "Bad Request", "unkey/application/invalid_input");
const NOT_FOUND = (what: string) => kind(404, "Not Found", `unkey/data/${what}_not_found`);
const CONFLICT = (what: string) => kind(409, "Conflicting Resource", `unkey/data/${what}_already_exists`);
const UNEXPECTED = kind(500, "Internal Server Error", "unkey/application/unexpected_error");
const UNAVAILABLE = kind(503, "Service Unavailable", "unkey/application/service_unavailable");

/** Every domain error a service raises, mapped once; a new reason without an entry fails to compile. */
export const problemKinds = {
  [ErrorReason.UNSPECIFIED]: UNEXPECTED,
  [ErrorReason.INVALID_INPUT]: BAD_REQUEST,
  [ErrorReason.UNAUTHENTICATED]: kind(401, "Unauthorized", "unkey/authentication/key_not_found"),
  [ErrorReason.INSUFFICIENT_PERMISSIONS]: kind(
    403,
    "Insufficient Permissions",
    "unkey/authorization/insufficient_permissions",
  ),
  [ErrorReason.API_NOT_FOUND]: NOT_FOUND("api"),
  [ErrorReason.KEY_NOT_FOUND]: NOT_FOUND("key"),
  [ErrorReason.IDENTITY_NOT_FOUND]: NOT_FOUND("identity"),
  [ErrorReason.PERMISSION_NOT_FOUND]: NOT_FOUND("permission"),
  [ErrorReason.ROLE_NOT_FOUND]: NOT_FOUND("role"),
  [ErrorReason.NAMESPACE_NOT_FOUND]: NOT_FOUND("ratelimit_namespace"),
  [ErrorReason.OVERRIDE_NOT_FOUND]: NOT_FOUND("ratelimit_override"),
  [ErrorReason.IDENTITY_ALREADY_EXISTS]: CONFLICT("identity"),
  [ErrorReason.PERMISSION_ALREADY_EXISTS]: CONFLICT("permission"),
  [ErrorReason.ROLE_ALREADY_EXISTS]: CONFLICT("role"),
  [ErrorReason.FORWARD_AUTH_POLICY_NOT_FOUND]: NOT_FOUND("forward_auth_policy"),
  [ErrorReason.FORWARD_AUTH_POLICY_ALREADY_EXISTS]: CONFLICT("forward_auth_policy"),
  [ErrorReason.PRECONDITION_FAILED]: kind(
    412,
    "Precondition Failed",
    "unkey/application/precondition_failed",
  ),
  [ErrorReason.PERMISSIONS_QUERY_SYNTAX]: kind(
    400,
    "Bad Request",
    "user/bad_request/permissions_query_syntax_error",
  ),
  [ErrorReason.INVALID_ANALYTICS_QUERY]: kind(400, "Bad Request", "user/bad_request/invalid_analytics_query"),
  [ErrorReason.UNAVAILABLE]: UNAVAILABLE,
  [ErrorReason.ANALYTICS_QUERY_LIMIT]: kind(
    422,
    "Unprocessable Entity",
    "user/unprocessable_entity/query_resources_exceeded",
  ),
  [ErrorReason.TOO_MANY_ANALYTICS_QUERIES]: kind(
    429,
    "Too Many Requests",
    "user/too_many_requests/query_quota_exceeded",
  ),
  [ErrorReason.WEBHOOK_NOT_FOUND]: NOT_FOUND("webhook"),
  [ErrorReason.WEBHOOK_DELIVERY_NOT_FOUND]: NOT_FOUND("webhook_delivery"),
  [ErrorReason.PORTAL_NOT_FOUND]: NOT_FOUND("portal"),
  [ErrorReason.PORTAL_SESSION_NOT_FOUND]: NOT_FOUND("portal_session"),
  [ErrorReason.PORTAL_ALREADY_EXISTS]: CONFLICT("portal"),
} satisfies Record<ErrorReason, Kind>;

const make = (k: Kind, detail: string, errors?: Violation[]) =>
  new Problem(k.status, k.title, k.type, detail, errors);

/** Problems the gateway itself raises, before any service is called. */
export const problems = {
  invalidInput: (detail: string, errors: Violation[]) => make(BAD_REQUEST, detail, errors),
  missingAuthorization: () =>
    make(
      kind(401, "Unauthorized", "unkey/authentication/missing"),
      "Authorization header is missing. Send 'Authorization: Bearer <ROOT_KEY>'.",
    ),
  malformedAuthorization: () =>
    make(
      kind(401, "Unauthorized", "unkey/authentication/malformed"),
      "Your authorization header is missing the 'Bearer ' prefix or the key after it.",
    ),
  unknownRootKey: () =>
    make(
      problemKinds[ErrorReason.UNAUTHENTICATED],
      "The provided root key is invalid. We could not find the requested key.",
    ),
  routeNotFound: (path: string) =>
    make(kind(404, "Not Found", "unkey/resource/not_found"), `No operation is served at '${path}'.`),
  methodNotAllowed: (method: string, path: string) =>
    make(
      kind(405, "Method Not Allowed", "unkey/application/method_not_allowed"),
      `'${path}' answers POST only, not ${method}.`,
    ),
  tooLarge: (limit: number) =>
    make(
      kind(413, "Payload Too Large", "unkey/application/request_too_large"),
      `The request body exceeds ${limit} bytes.`,
    ),
  unavailable: () => make(UNAVAILABLE, "A service behind the gateway is unavailable; retry shortly."),
  authBusy: () => make(UNAVAILABLE, "Too many unknown root keys are being checked at once; retry shortly."),
  /** One client's lookups of new root keys beyond its share (auth.ts): the same 503, saying whose. */
  clientBusy: () =>
    make(UNAVAILABLE, "Too many unknown root keys are being checked for this client; retry shortly."),
  /** A service did not answer within the call's deadline (RPC_TIMEOUT_MS): 503, as Unkey's clients expect, not 504. */
  timedOut: () => make(UNAVAILABLE, "A service behind the gateway did not answer in time; retry shortly."),
  /** No portal_session cookie, or one naming no live session (docs/portal.md). */
  noPortalSession: () =>
    make(
      problemKinds[ErrorReason.UNAUTHENTICATED],
      "This call needs a portal session: send the portal_session cookie that portal.exchangeCode set.",
    ),
  /** A state-changing portal call from another origin (docs/portal.md, CSRF). */
  crossOrigin: () =>
    make(
      kind(403, "Forbidden", "unkey/authorization/forbidden"),
      "A state-changing portal call must come from the portal's own origin: its Origin (or Sec-Fetch-Site: same-origin) must name this deployment's public URL.",
    ),
  /** One client's portal.exchangeCode attempts beyond its budget (portal-web.ts). */
  tooManyExchanges: (retryAfterSeconds: number) =>
    make(
      kind(429, "Too Many Requests", "unkey/application/too_many_requests"),
      `Too many portal.exchangeCode attempts from this client; retry in ${retryAfterSeconds} s.`,
    ),
  unexpected: () =>
    make(UNEXPECTED, "Something went wrong on our side. Quote the requestId when reporting it."),
};

/** Public locations are "/body/..."; a service names fields from the request's root. */
const publicLocation = (location: string) =>
  location.startsWith("/body") ? location : `/body${location.startsWith("/") ? "" : "/"}${location}`;

/**
 * What the public sees for an error thrown while serving a request. Domain
 * errors say what went wrong; anything else is a 5xx that says nothing
 * specific, and `unexpected` is told so the cause is logged once.
 */
export function problemOf(err: unknown, unexpected: (cause: unknown) => void): Problem {
  if (err instanceof Problem) return err;
  const detail = errorDetailOf(err);
  if (detail && err instanceof ConnectError) {
    const k = problemKinds[detail.reason];
    if (k.status >= 500) {
      unexpected(err);
      return k.status === 503 ? problems.unavailable() : problems.unexpected();
    }
    const errors =
      k.status === 400
        ? detail.violations.map((v) => ({
            location: publicLocation(v.location),
            message: v.message,
            ...(v.fix ? { fix: v.fix } : {}),
          }))
        : undefined;
    return make(k, err.rawMessage, errors);
  }
  unexpected(err);
  if (err instanceof ConnectError && err.code === Code.DeadlineExceeded) return problems.timedOut();
  if (err instanceof ConnectError && err.code === Code.Unavailable) return problems.unavailable();
  return problems.unexpected();
}

export function problemBody(requestId: string, p: Problem): string {
  return JSON.stringify({
    meta: { requestId },
    error: {
      title: p.title,
      detail: p.detail,
      status: p.status,
      type: p.type,
      ...(p.errors ? { errors: p.errors } : {}),
    },
  });
}
