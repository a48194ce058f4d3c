import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";

async function withOverrides(n: number) {
  const h = harness();
  const c = caller("ws_1", ...LIMITER, "ratelimit.*.set_override", "ratelimit.*.read_override");
  await h.client.limit({
    caller: c,
    check: { namespace: "api.requests", identifier: "x", limit: 1n, duration: 1000n },
  });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { overrideId } = await h.client.setOverride({
      caller: c,
      namespace: "api.requests",
      identifier: `user_${i}`,
      limit: BigInt(i),
      duration: 1000n,
    });
    ids.push(overrideId);
  }
  return { ...h, c, ids: ids.sort((a, b) => (a < b ? -1 : 1)) };
}

describe("ratelimits.listOverrides", () => {
  it("pages 10 at a time by default, ordered by id, with a cursor only while more remain", async () => {
    const { client, c, ids } = await withOverrides(12);
    const first = await client.listOverrides({ caller: c, namespace: "api.requests" });
    expect(first.overrides.map((o) => o.overrideId)).toEqual(ids.slice(0, 10));
    expect(first.page).toMatchObject({ cursor: ids[9], hasMore: true });
    const second = await client.listOverrides({
      caller: c,
      namespace: "api.requests",
      page: { cursor: first.page!.cursor },
    });
    expect(second.overrides.map((o) => o.overrideId)).toEqual(ids.slice(10));
    expect(second.page).toMatchObject({ cursor: "", hasMore: false });
    expect(second.overrides[0]).toMatchObject({ namespace: "api.requests", duration: 1000n });
  });

  it("answers the page size asked for, from 1 to 100", async () => {
    const { client, c, ids } = await withOverrides(3);
    const res = await client.listOverrides({ caller: c, namespace: "api.requests", page: { limit: 3 } });
    expect(res.overrides.map((o) => o.overrideId)).toEqual(ids);
    expect(res.page?.hasMore).toBe(false);
    const one = await client.listOverrides({ caller: c, namespace: "api.requests", page: { limit: 1 } });
    expect(one.overrides).toHaveLength(1);
    expect(one.page?.hasMore).toBe(true);
  });

  it("answers an empty page for a namespace without overrides", async () => {
    const { client, c } = await withOverrides(0);
    const res = await client.listOverrides({ caller: c, namespace: "api.requests" });
    expect(res.overrides).toEqual([]);
    expect(res.page).toMatchObject({ cursor: "", hasMore: false });
  });

  it("answers 400 for a page size over 100 or a cursor it never gave", async () => {
    const { client, c } = await withOverrides(1);
    const size = await rejection(
      client.listOverrides({ caller: c, namespace: "api.requests", page: { limit: 101 } }),
      ErrorReason.INVALID_INPUT,
    );
    expect(errorDetailOf(size)?.violations[0]?.location).toBe("/limit");
    const cursor = await rejection(
      client.listOverrides({ caller: c, namespace: "api.requests", page: { cursor: "garbage" } }),
      ErrorReason.INVALID_INPUT,
    );
    expect(errorDetailOf(cursor)?.violations[0]?.location).toBe("/cursor");
  });

  it("answers 404 for an unknown namespace and 403 without read_override", async () => {
    const { client, c } = await withOverrides(1);
    await rejection(client.listOverrides({ caller: c, namespace: "nope" }), ErrorReason.NAMESPACE_NOT_FOUND);
    await rejection(
      client.listOverrides({ caller: caller("ws_1", "ratelimit.*.limit"), namespace: "api.requests" }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });
});
