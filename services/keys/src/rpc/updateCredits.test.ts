import { CreditsOperation, RefillInterval, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const updater = callerOf("ws_1", "api.*.update_key");
const verifier = callerOf("ws_1", "api.*.verify_key");

describe("updateCredits", () => {
  it("sets, increments and decrements the balance, answering remaining and refill", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId } = await client.createKey({
      caller: callerOf("ws_1", "*"),
      apiId,
      credits: { remaining: 10n, refill: { interval: RefillInterval.DAILY, amount: 10n } },
    });
    const refill = { interval: RefillInterval.DAILY, amount: 10n };
    expect(
      await client.updateCredits({
        caller: updater,
        keyId,
        operation: CreditsOperation.INCREMENT,
        value: 5n,
      }),
    ).toMatchObject({ remaining: 15n, refill });
    expect(
      await client.updateCredits({
        caller: updater,
        keyId,
        operation: CreditsOperation.DECREMENT,
        value: 4n,
      }),
    ).toMatchObject({ remaining: 11n, refill });
    expect(
      await client.updateCredits({ caller: updater, keyId, operation: CreditsOperation.SET, value: 3n }),
    ).toMatchObject({ remaining: 3n, refill });
  });

  it("clamps a decrement at 0", async () => {
    const { client, seed } = memoryKeys();
    const { keyId, key } = await seed.key({ apiId: await seed.api(), credits: 3 });
    const res = await client.updateCredits({
      caller: updater,
      keyId,
      operation: CreditsOperation.DECREMENT,
      value: 50n,
    });
    expect(res.remaining).toBe(0n);
    expect(await client.verifyKey({ caller: verifier, key })).toMatchObject({
      code: VerifyCode.USAGE_EXCEEDED,
      credits: 0n,
    });
  });

  it("makes the key unlimited and clears its refill on set with no value", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key } = await client.createKey({
      caller: callerOf("ws_1", "*"),
      apiId,
      credits: { remaining: 0n, refill: { interval: RefillInterval.MONTHLY, amount: 10n } },
    });
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.USAGE_EXCEEDED);
    const res = await client.updateCredits({ caller: updater, keyId, operation: CreditsOperation.SET });
    expect(res.remaining).toBeUndefined();
    expect(res.refill).toBeUndefined();
    // The cached key knew it was limited: the change reaches the very next verification.
    const verified = await client.verifyKey({ caller: verifier, key });
    expect(verified.code).toBe(VerifyCode.VALID);
    expect(verified.credits).toBeUndefined();
  });

  it("gives an unlimited key a balance on set", async () => {
    const { client, seed } = memoryKeys();
    const { keyId, key } = await seed.key({ apiId: await seed.api() });
    await client.verifyKey({ caller: verifier, key });
    await client.updateCredits({ caller: updater, keyId, operation: CreditsOperation.SET, value: 1n });
    expect(await client.verifyKey({ caller: verifier, key })).toMatchObject({
      code: VerifyCode.VALID,
      credits: 0n,
    });
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.USAGE_EXCEEDED);
  });

  it("answers INVALID_INPUT to increment or decrement an unlimited key", async () => {
    const { client, seed } = memoryKeys();
    const { keyId } = await seed.key({ apiId: await seed.api() });
    for (const operation of [CreditsOperation.INCREMENT, CreditsOperation.DECREMENT]) {
      expect(await rejection(client.updateCredits({ caller: updater, keyId, operation, value: 1n }))).toEqual(
        {
          reason: ErrorReason.INVALID_INPUT,
          message: "You cannot increment or decrement a key with unlimited credits.",
        },
      );
    }
  });

  it("answers INVALID_INPUT for increment without a value, a negative value or no operation", async () => {
    const { client, seed } = memoryKeys();
    const { keyId } = await seed.key({ apiId: await seed.api(), credits: 1 });
    const noValue = await rejection(
      client.updateCredits({ caller: updater, keyId, operation: CreditsOperation.INCREMENT }),
    );
    expect(noValue).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "value is required to increment credits",
    });
    const negative = await rejection(
      client.updateCredits({ caller: updater, keyId, operation: CreditsOperation.SET, value: -1n }),
    );
    expect(negative.reason).toBe(ErrorReason.INVALID_INPUT);
    expect((await rejection(client.updateCredits({ caller: updater, keyId }))).reason).toBe(
      ErrorReason.INVALID_INPUT,
    );
  });

  it("answers INSUFFICIENT_PERMISSIONS without update_key for the key's API", async () => {
    const { client, seed } = memoryKeys();
    const { keyId } = await seed.key({ apiId: await seed.api(), credits: 1 });
    const failure = await rejection(
      client.updateCredits({
        caller: callerOf("ws_1", "api.*.read_key"),
        keyId,
        operation: CreditsOperation.SET,
        value: 5n,
      }),
    );
    expect(failure.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
  });

  it("answers KEY_NOT_FOUND for a key of another workspace", async () => {
    const { client, seed } = memoryKeys();
    const { keyId } = await seed.key({ apiId: await seed.api("ws_2"), workspaceId: "ws_2", credits: 1 });
    const failure = await rejection(
      client.updateCredits({
        caller: callerOf("ws_1", "*"),
        keyId,
        operation: CreditsOperation.SET,
        value: 5n,
      }),
    );
    expect(failure).toEqual({
      reason: ErrorReason.KEY_NOT_FOUND,
      message: "The specified key was not found.",
    });
  });
});
