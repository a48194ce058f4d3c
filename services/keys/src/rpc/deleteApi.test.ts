import { fromBinary } from "@bufbuild/protobuf";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason, MemoryBus } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";
import { KEY_CHANGED } from "../events.ts";

const verifier = callerOf("ws_1", "api.*.verify_key");

describe("deleteApi", () => {
  it("makes every key of the API verify NOT_FOUND at the next verification and tells every instance", async () => {
    const bus = new MemoryBus();
    const announced: Uint8Array[] = [];
    bus.subscribe(KEY_CHANGED, (data) => announced.push(data));
    const { client, seed } = memoryKeys({ bus });
    const apiId = await seed.api();
    const { key } = await seed.key({ apiId });
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.VALID);
    announced.length = 0;
    expect(await client.deleteApi({ caller: callerOf("ws_1", `api.${apiId}.delete_api`), apiId })).toEqual(
      expect.objectContaining({}),
    );
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.NOT_FOUND);
    // No hash: every instance drops the workspace's cached keys.
    expect(announced.map((d) => fromBinary(KeyChangedSchema, d))).toMatchObject([
      { workspaceId: "ws_1", apiId, hash: "" },
    ]);
    expect((await rejection(client.getApi({ caller: callerOf("ws_1", "*"), apiId }))).reason).toBe(
      ErrorReason.API_NOT_FOUND,
    );
  });

  it("answers API_NOT_FOUND for a deleted API, an API of another workspace and a missing one", async () => {
    const { client, seed } = memoryKeys();
    const caller = callerOf("ws_1", "*");
    const apiId = await seed.api();
    await client.deleteApi({ caller, apiId });
    const again = await rejection(client.deleteApi({ caller, apiId }));
    expect(again).toEqual({ reason: ErrorReason.API_NOT_FOUND, message: "The specified API was not found." });
    expect(await rejection(client.deleteApi({ caller, apiId: await seed.api("ws_2") }))).toEqual(again);
    expect(await rejection(client.deleteApi({ caller, apiId: "api_missing00000" }))).toEqual(again);
  });

  it("answers INSUFFICIENT_PERMISSIONS without delete_api for the API and keeps it", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(client.deleteApi({ caller: callerOf("ws_1", "api.*.read_api"), apiId }));
    expect(failure).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message: `The root key lacks the permission 'api.${apiId}.delete_api'.`,
    });
    expect((await client.getApi({ caller: callerOf("ws_1", "*"), apiId })).api?.id).toBe(apiId);
  });
});
