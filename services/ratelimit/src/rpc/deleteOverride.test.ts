import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";

const ALL = [
  ...LIMITER,
  "ratelimit.*.set_override",
  "ratelimit.*.read_override",
  "ratelimit.*.delete_override",
];
const check = { namespace: "api.requests", identifier: "user_1", limit: 3n, duration: 1000n };

async function withOverride() {
  const h = harness();
  const c = caller("ws_1", ...ALL);
  await h.client.limit({ caller: c, check });
  await h.client.setOverride({
    caller: c,
    namespace: "api.requests",
    identifier: "user_1",
    limit: 50n,
    duration: 1000n,
  });
  return { ...h, c };
}

describe("ratelimits.deleteOverride", () => {
  it("deletes the override, answers {}, and the next check uses the requested limit again", async () => {
    const { client, c } = await withOverride();
    expect((await client.limit({ caller: c, check })).result?.limit).toBe(50n);
    const res = await client.deleteOverride({ caller: c, namespace: "api.requests", identifier: "user_1" });
    expect(res).toMatchObject({});
    const after = await client.limit({ caller: c, check });
    expect(after.result?.limit).toBe(3n);
    expect(after.result?.overrideId).toBeUndefined();
    await rejection(
      client.getOverride({ caller: c, namespace: "api.requests", identifier: "user_1" }),
      ErrorReason.OVERRIDE_NOT_FOUND,
    );
  });

  it("answers 404 OVERRIDE_NOT_FOUND the second time", async () => {
    const { client, c } = await withOverride();
    await client.deleteOverride({ caller: c, namespace: "api.requests", identifier: "user_1" });
    await rejection(
      client.deleteOverride({ caller: c, namespace: "api.requests", identifier: "user_1" }),
      ErrorReason.OVERRIDE_NOT_FOUND,
    );
  });

  it("answers 404 NAMESPACE_NOT_FOUND for an unknown namespace", async () => {
    const { client, c } = await withOverride();
    await rejection(
      client.deleteOverride({ caller: c, namespace: "nope", identifier: "user_1" }),
      ErrorReason.NAMESPACE_NOT_FOUND,
    );
  });

  it("answers 403 without delete_override and keeps the override", async () => {
    const { client, c } = await withOverride();
    await rejection(
      client.deleteOverride({
        caller: caller("ws_1", "ratelimit.*.set_override", "ratelimit.*.read_override"),
        namespace: "api.requests",
        identifier: "user_1",
      }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    const got = await client.getOverride({ caller: c, namespace: "api.requests", identifier: "user_1" });
    expect(got.override?.limit).toBe(50n);
  });
});
