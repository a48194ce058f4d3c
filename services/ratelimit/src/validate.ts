import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { LimitCheck } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { domainError, ErrorReason, invalidInput } from "@latchkey/runtime";

/** Unkey's limits, checked again here so every caller of the service gets the same answers. */
export const MAX_TEXT = 512;
export const MIN_DURATION = 1000;
export const MAX_DURATION = 2_592_000_000;
export const MAX_CHECKS = 100;
export const PAGE_DEFAULT = 10;
export const PAGE_MAX = 100;

/** A check with no optional holes: cost defaulted, numbers in range. */
export interface ValidCheck {
  namespace: string;
  identifier: string;
  limit: number;
  duration: number;
  cost: number;
}

/** The gateway always sends who is calling; a call without a workspace is not authenticated. */
export function validCaller(caller: Caller | undefined): Caller {
  if (!caller?.workspaceId) throw domainError(ErrorReason.UNAUTHENTICATED, "The call carries no caller.");
  return caller;
}

export function text(value: string, location: string): string {
  if (value.length === 0)
    throw invalidInput(location, "must not be empty", `Send 1 to ${MAX_TEXT} characters.`);
  if (value.length > MAX_TEXT) {
    throw invalidInput(
      location,
      `must be at most ${MAX_TEXT} characters`,
      `Send 1 to ${MAX_TEXT} characters.`,
    );
  }
  return value;
}

export function integer(value: bigint, location: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  // Compared as a number, without a BigInt per bound: beyond 2^53 rounding can only move a value further out of range.
  const n = Number(value);
  if (!(n >= min && n <= max)) {
    throw invalidInput(
      location,
      `must be between ${min} and ${max}`,
      `Send an integer from ${min} to ${max}.`,
    );
  }
  return n;
}

/** `at` prefixes the locations, e.g. "/3" for the fourth check of a multiLimit. */
export function validCheck(check: LimitCheck | undefined, at = ""): ValidCheck {
  if (!check) throw invalidInput(at || "/", "a check is required");
  return {
    namespace: text(check.namespace, `${at}/namespace`),
    identifier: text(check.identifier, `${at}/identifier`),
    limit: integer(check.limit, `${at}/limit`, 1),
    duration: integer(check.duration, `${at}/duration`, MIN_DURATION, MAX_DURATION),
    cost: check.cost === undefined ? 1 : integer(check.cost, `${at}/cost`, 0),
  };
}
