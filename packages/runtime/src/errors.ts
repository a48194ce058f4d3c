import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type ErrorDetail,
  ErrorDetailSchema,
  ErrorReason,
  FieldViolationSchema,
} from "@latchkey/proto/common/v1/common_pb";

export { ErrorReason };

/** The gRPC code each reason travels with, so plain gRPC clients see a sensible status too. */
const grpcCodeOf = {
  [ErrorReason.UNSPECIFIED]: Code.Internal,
  [ErrorReason.INVALID_INPUT]: Code.InvalidArgument,
  [ErrorReason.UNAUTHENTICATED]: Code.Unauthenticated,
  [ErrorReason.INSUFFICIENT_PERMISSIONS]: Code.PermissionDenied,
  [ErrorReason.API_NOT_FOUND]: Code.NotFound,
  [ErrorReason.KEY_NOT_FOUND]: Code.NotFound,
  [ErrorReason.IDENTITY_NOT_FOUND]: Code.NotFound,
  [ErrorReason.PERMISSION_NOT_FOUND]: Code.NotFound,
  [ErrorReason.ROLE_NOT_FOUND]: Code.NotFound,
  [ErrorReason.NAMESPACE_NOT_FOUND]: Code.NotFound,
  [ErrorReason.OVERRIDE_NOT_FOUND]: Code.NotFound,
  [ErrorReason.IDENTITY_ALREADY_EXISTS]: Code.AlreadyExists,
  [ErrorReason.PERMISSION_ALREADY_EXISTS]: Code.AlreadyExists,
  [ErrorReason.ROLE_ALREADY_EXISTS]: Code.AlreadyExists,
  [ErrorReason.PRECONDITION_FAILED]: Code.FailedPrecondition,
  [ErrorReason.PERMISSIONS_QUERY_SYNTAX]: Code.InvalidArgument,
  [ErrorReason.INVALID_ANALYTICS_QUERY]: Code.InvalidArgument,
  [ErrorReason.UNAVAILABLE]: Code.Unavailable,
  [ErrorReason.ANALYTICS_QUERY_LIMIT]: Code.ResourceExhausted,
  [ErrorReason.TOO_MANY_ANALYTICS_QUERIES]: Code.ResourceExhausted,
  [ErrorReason.WEBHOOK_NOT_FOUND]: Code.NotFound,
  [ErrorReason.WEBHOOK_DELIVERY_NOT_FOUND]: Code.NotFound,
  [ErrorReason.PORTAL_NOT_FOUND]: Code.NotFound,
  [ErrorReason.PORTAL_SESSION_NOT_FOUND]: Code.NotFound,
  [ErrorReason.PORTAL_ALREADY_EXISTS]: Code.AlreadyExists,
  [ErrorReason.FORWARD_AUTH_POLICY_NOT_FOUND]: Code.NotFound,
  [ErrorReason.FORWARD_AUTH_POLICY_ALREADY_EXISTS]: Code.AlreadyExists,
} satisfies Record<ErrorReason, Code>;

export interface Violation {
  location: string;
  message: string;
  fix?: string;
}

/** A domain error: a ConnectError carrying a typed ErrorDetail the gateway maps to the public problem body. */
export function domainError(
  reason: ErrorReason,
  message: string,
  violations: Violation[] = [],
): ConnectError {
  const detail = create(ErrorDetailSchema, {
    reason,
    violations: violations.map((v) => create(FieldViolationSchema, { ...v, fix: v.fix ?? "" })),
  });
  return new ConnectError(message, grpcCodeOf[reason], undefined, [
    { desc: ErrorDetailSchema, value: detail },
  ]);
}

export const invalidInput = (location: string, message: string, fix?: string) =>
  domainError(ErrorReason.INVALID_INPUT, message, [{ location, message, ...(fix ? { fix } : {}) }]);

/** The ErrorDetail of an error raised by domainError, if it is one. */
export function errorDetailOf(err: unknown): ErrorDetail | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  return err.findDetails(ErrorDetailSchema)[0];
}

/** Node's and postgres.js's codes of a connection that failed or broke: the same call may pass later. */
const TRANSIENT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
]);

/**
 * Whether an error is a dependency's passing trouble rather than a fault of the call: a connection
 * that failed or broke (Node's or postgres.js's code), or PostgreSQL's SQLSTATE class 08
 * (connection), 40 (serialization, deadlock), 53 (resources), 57 (shutdown, cancelled, timed out),
 * 58 (system) or 55P03 (lock not available).
 */
export function isTransientError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  if (TRANSIENT_CODES.has(code)) return true;
  if (!/^[0-9A-Z]{5}$/.test(code)) return false;
  return ["08", "40", "53", "57", "58"].includes(code.slice(0, 2)) || code === "55P03";
}

/**
 * A failure as the ConnectError a caller sees: a domain error as it is; a dependency's passing
 * trouble (isTransientError) as UNAVAILABLE, so the public API answers 503 and a client retries,
 * not 500; anything else Internal.
 */
export function callErrorOf(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (isTransientError(err)) {
    return domainError(
      ErrorReason.UNAVAILABLE,
      "A database or service Latchkey depends on is unavailable right now; retry shortly.",
    );
  }
  return ConnectError.from(err, Code.Internal);
}
