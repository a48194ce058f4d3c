import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

describe("createApi", () => {
  it("creates an API in the caller's workspace and answers its id", async () => {
    const { client, clock } = memoryKeys();
    const { apiId } = await client.createApi({
      caller: callerOf("ws_1", "api.*.create_api"),
      name: "payments",
    });
    expect(apiId).toMatch(/^api_[1-9A-HJ-NP-Za-km-z]{16}$/);
    const { api } = await client.getApi({ caller: callerOf("ws_1", "api.*.read_api"), apiId });
    expect(api).toMatchObject({ id: apiId, name: "payments", createdAt: BigInt(clock.now()) });
  });

  it("answers INSUFFICIENT_PERMISSIONS to a root key without api.*.create_api", async () => {
    const { client } = memoryKeys();
    const caller = callerOf("ws_1", "api.api_1.create_api", "api.*.read_api");
    expect(await rejection(client.createApi({ caller, name: "payments" }))).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message: "The root key lacks the permission 'api.*.create_api'.",
    });
  });

  it("accepts Latchkey's apis. spelling of the permission", async () => {
    const { client } = memoryKeys();
    const { apiId } = await client.createApi({
      caller: callerOf("ws_1", "apis.*.create_api"),
      name: "payments",
    });
    expect(apiId).toMatch(/^api_/);
  });

  it("answers INVALID_INPUT for a blank name", async () => {
    const { client } = memoryKeys();
    expect((await rejection(client.createApi({ caller: callerOf("ws_1", "*"), name: "  " }))).reason).toBe(
      ErrorReason.INVALID_INPUT,
    );
  });

  it("answers UNAUTHENTICATED when the request carries no caller", async () => {
    const { client } = memoryKeys();
    expect((await rejection(client.createApi({ name: "payments" }))).reason).toBe(
      ErrorReason.UNAUTHENTICATED,
    );
  });
});
