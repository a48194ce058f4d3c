import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

describe("listApis", () => {
  it("pages the workspace's APIs by id with a cursor while more remain, and never another workspace's", async () => {
    const { client, seed } = memoryKeys();
    const mine = (await Promise.all([1, 2, 3, 4, 5].map(() => seed.api()))).sort();
    await seed.api("ws_2");
    const caller = callerOf("ws_1", "api.*.read_api");
    const first = await client.listApis({ caller, limit: 2 });
    expect(first.apis.map((a) => a.id)).toEqual(mine.slice(0, 2));
    expect(first.pagination).toMatchObject({ cursor: mine[1], hasMore: true });
    const second = await client.listApis({ caller, limit: 2, cursor: first.pagination!.cursor });
    expect(second.apis.map((a) => a.id)).toEqual(mine.slice(2, 4));
    const last = await client.listApis({ caller, limit: 2, cursor: second.pagination!.cursor });
    expect(last.apis.map((a) => a.id)).toEqual(mine.slice(4));
    expect(last.pagination).toMatchObject({ cursor: "", hasMore: false });
    expect(last.apis[0]).toMatchObject({ name: "seeded" });
  });

  it("leaves deleted APIs out", async () => {
    const { client, seed, deps } = memoryKeys();
    const kept = await seed.api();
    const gone = await seed.api();
    deps.store.patchApi(gone, { deletedAt: 1 });
    const res = await client.listApis({ caller: callerOf("ws_1", "api.*.read_api") });
    expect(res.apis.map((a) => a.id)).toEqual([kept]);
  });

  it("answers a root key holding read_api for some APIs exactly those, a named one that does not exist left out", async () => {
    const { client, seed } = memoryKeys();
    const [a, b, c] = await Promise.all([seed.api(), seed.api(), seed.api()]);
    const theirs = await seed.api("ws_2");
    const caller = callerOf(
      "ws_1",
      `api.${a}.read_api`,
      `api.${c}.read_api`,
      `api.${theirs}.read_api`,
      "api.api_missing00000.read_api",
      `api.${b}.read_key`,
    );
    const res = await client.listApis({ caller });
    expect(res.apis.map((x) => x.id)).toEqual([a, c].sort());
  });

  it("answers INSUFFICIENT_PERMISSIONS to a root key that may read no API", async () => {
    const { client, seed } = memoryKeys();
    await seed.api();
    expect(await rejection(client.listApis({ caller: callerOf("ws_1", "api.*.read_key") }))).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message:
        "The root key lacks the permission 'api.*.read_api' (or 'api.<apiId>.read_api' for the APIs it lists).",
    });
  });

  it("refuses a page size outside 1 to 100", async () => {
    const { client } = memoryKeys();
    const caller = callerOf("ws_1", "api.*.read_api");
    expect((await rejection(client.listApis({ caller, limit: 101 }))).reason).toBe(ErrorReason.INVALID_INPUT);
    expect((await rejection(client.listApis({ caller, limit: 0 }))).reason).toBe(ErrorReason.INVALID_INPUT);
  });
});
