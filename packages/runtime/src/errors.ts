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
