import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";

async function withOverride() {
  const h = harness();
  const c = caller("ws_1", ...LIMITER, "ratelimit.*.set_override", "ratelimit.*.read_override");
  await h.client.limit({
    caller: c,
    check: { namespace: "api.requests", identifier: "x", limit: 1n, duration: 1000n },
  });
  const { overrideId } = await h.client.setOverride({
    caller: c,
    namespace: "api.requests",
    identifier: "user_*",
    limit: 10n,
    duration: 60_000n,
  });
  return { ...h, c, overrideId };
}

describe("ratelimits.getOverride", () => {
  it("answers the override by the identifier it was set with", async () => {
    const { client, c, overrideId } = await withOverride();
    const res = await client.getOverride({ caller: c, namespace: "api.requests", identifier: "user_*" });
    expect(res.override).toMatchObject({
      overrideId,
      namespace: "api.requests",
      identifier: "user_*",
      limit: 10n,
      duration: 60_000n,
    });
  });

  it("answers 404 OVERRIDE_NOT_FOUND for an identifier the pattern would match but that was never set", async () => {
    const { client, c } = await withOverride();
    await rejection(
      client.getOverride({ caller: c, namespace: "api.requests", identifier: "user_1" }),
      ErrorReason.OVERRIDE_NOT_FOUND,
    );
  });

  it("answers 404 NAMESPACE_NOT_FOUND for an unknown namespace", async () => {
    const { client, c } = await withOverride();
    await rejection(
      client.getOverride({ caller: c, namespace: "nope", identifier: "user_*" }),
      ErrorReason.NAMESPACE_NOT_FOUND,
    );
  });

  it("answers 403 without read_override", async () => {
    const { client } = await withOverride();
    await rejection(
      client.getOverride({
        caller: caller("ws_1", "ratelimit.*.set_override"),
        namespace: "api.requests",
        identifier: "user_*",
      }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });

  it("does not show one workspace's overrides to another", async () => {
    const { client } = await withOverride();
    await rejection(
      client.getOverride({ caller: caller("ws_2", "*"), namespace: "api.requests", identifier: "user_*" }),
      ErrorReason.NAMESPACE_NOT_FOUND,
    );
  });
});
