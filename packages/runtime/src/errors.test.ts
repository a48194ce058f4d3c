import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { callErrorOf, domainError, ErrorReason, errorDetailOf, isTransientError } from "./errors.ts";

const withCode = (code: string) => Object.assign(new Error(code), { code });

describe("isTransientError", () => {
  it.each([
    "CONNECTION_CLOSED",
    "CONNECTION_DESTROYED",
    "CONNECT_TIMEOUT",
    "ECONNRESET",
    "ECONNREFUSED",
    "EPIPE",
    "57P01", // terminated by an administrator
    "57014", // cancelled, e.g. statement_timeout
    "08006", // connection failure
    "40001", // serialization failure
    "40P01", // deadlock
    "53300", // too many connections
    "55P03", // lock not available
  ])("is true of %s", (code) => expect(isTransientError(withCode(code))).toBe(true));

  it.each([
    "23505", // unique violation: the same call fails again
    "22P02", // invalid text representation
    "42P01", // undefined table: a bug, not an outage
    "ERR_SOMETHING",
  ])("is false of %s", (code) => expect(isTransientError(withCode(code))).toBe(false));

  it("is false of an error without a code, and of what is not an error", () => {
    expect(isTransientError(new Error("boom"))).toBe(false);
    expect(isTransientError(undefined)).toBe(false);
    expect(isTransientError("ECONNRESET")).toBe(false);
  });
});

describe("callErrorOf", () => {
  it("keeps a domain error as it is", () => {
    const err = domainError(ErrorReason.KEY_NOT_FOUND, "no such key");
    expect(callErrorOf(err)).toBe(err);
  });

  it("answers a dependency's passing trouble as UNAVAILABLE, saying nothing of its cause", () => {
    const err = callErrorOf(withCode("ECONNRESET"));
    expect(err.code).toBe(Code.Unavailable);
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.UNAVAILABLE);
    expect(err.rawMessage).not.toContain("ECONNRESET");
  });

  it("answers anything else as Internal", () => {
    const err = callErrorOf(new Error("a bug"));
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code).toBe(Code.Internal);
    expect(errorDetailOf(err)).toBeUndefined();
  });
});
