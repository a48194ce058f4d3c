// Assertions for tests of a service's RPCs: apart from the other fixtures here, since it imports vitest and benches
// import those.
import { ConnectError } from "@connectrpc/connect";
import type { ErrorReason as Reason } from "@latchkey/proto/common/v1/common_pb";
import { expect } from "vitest";
import { ErrorReason, errorDetailOf } from "../src/errors.ts";

/** Asserts the call fails with `reason`, and with the message and field location given. */
export async function expectReason(
  call: Promise<unknown>,
  reason: Reason,
  expected: { message?: string | RegExp; location?: string } = {},
): Promise<ConnectError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "the call should have failed").toBeInstanceOf(ConnectError);
  const connectError = err as ConnectError;
  expect(ErrorReason[errorDetailOf(connectError)?.reason ?? ErrorReason.UNSPECIFIED]).toBe(
    ErrorReason[reason],
  );
  if (expected.message !== undefined) {
    if (typeof expected.message === "string") expect(connectError.rawMessage).toBe(expected.message);
    else expect(connectError.rawMessage).toMatch(expected.message);
  }
  if (expected.location !== undefined) {
    expect(errorDetailOf(connectError)?.violations.map((v) => v.location)).toEqual([expected.location]);
  }
  return connectError;
}

/** The message requirePermissions gives when `permission` is missing. */
export const lacks = (permission: string) => `The root key lacks the permission '${permission}'.`;
