import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";

const SETTER = [...LIMITER, "ratelimit.*.set_override", "ratelimit.*.read_override"];

async function withNamespace(name = "api.requests") {
  const h = harness();
  const c = caller("ws_1", ...SETTER);
  await h.client.limit({
    caller: c,
    check: { namespace: name, identifier: "x", limit: 1n, duration: 1000n },
  });
  return { ...h, c };
}

describe("ratelimits.setOverride", () => {
  it("creates an override and answers its rlor_ id", async () => {
    const { client, c } = await withNamespace();
    const res = await client.setOverride({
      caller: c,
      namespace: "api.requests",
      identifier: "user_*",
      limit: 10n,
      duration: 60_000n,
    });
    expect(res.overrideId).toMatch(/^rlor_/);
  });

  it("upserts by identifier, keeping the overrideId and replacing limit and duration", async () => {
    const { client, c } = await withNamespace();
    const set = (limit: bigint, duration: bigint) =>
      client.setOverride({ caller: c, namespace: "api.requests", identifier: "user_1", limit, duration });
    const first = await set(10n, 1000n);
    const second = await set(0n, 5000n);
    expect(second.overrideId).toBe(first.overrideId);
    const got = await client.getOverride({ caller: c, namespace: "api.requests", identifier: "user_1" });
    expect(got.override).toMatchObject({ overrideId: first.overrideId, limit: 0n, duration: 5000n });
  });

  it("accepts the namespace by its rlns_ id", async () => {
    const { client, c, deps } = await withNamespace();
    const ns = (await deps.store.namespaceByName("ws_1", "api.requests"))!;
    const res = await client.setOverride({
      caller: c,
      namespace: ns.id,
      identifier: "a",
      limit: 1n,
      duration: 1000n,
    });
    expect(res.overrideId).toMatch(/^rlor_/);
  });

  it("answers 404 NAMESPACE_NOT_FOUND for an unknown namespace and creates nothing", async () => {
    const { client, c, deps } = await withNamespace();
    await rejection(
      client.setOverride({ caller: c, namespace: "nope", identifier: "a", limit: 1n, duration: 1000n }),
      ErrorReason.NAMESPACE_NOT_FOUND,
    );
    expect(await deps.store.namespaceByName("ws_1", "nope")).toBeUndefined();
  });

  it("answers 403 without set_override, the same whether the namespace exists or not", async () => {
    const { client } = await withNamespace();
    const reader = caller("ws_1", "ratelimit.*.read_override", "ratelimit.*.limit");
    const existing = await rejection(
      client.setOverride({
        caller: reader,
        namespace: "api.requests",
        identifier: "a",
        limit: 1n,
        duration: 1000n,
      }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    const missing = await rejection(
      client.setOverride({ caller: reader, namespace: "nope", identifier: "a", limit: 1n, duration: 1000n }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    expect(missing.message).toBe(existing.message);
  });

  it("lets ratelimit.<namespaceId>.set_override act on that namespace only", async () => {
    const { client, deps, c } = await withNamespace();
    await client.limit({
      caller: c,
      check: { namespace: "other", identifier: "x", limit: 1n, duration: 1000n },
    });
    const ns = (await deps.store.namespaceByName("ws_1", "api.requests"))!;
    const scoped = caller("ws_1", `ratelimit.${ns.id}.set_override`);
    await client.setOverride({
      caller: scoped,
      namespace: ns.id,
      identifier: "a",
      limit: 1n,
      duration: 1000n,
    });
    await rejection(
      client.setOverride({ caller: scoped, namespace: "other", identifier: "a", limit: 1n, duration: 1000n }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });

  it("does not reach another workspace's namespace", async () => {
    const { client } = await withNamespace();
    await rejection(
      client.setOverride({
        caller: caller("ws_2", "*"),
        namespace: "api.requests",
        identifier: "a",
        limit: 1n,
        duration: 1000n,
      }),
      ErrorReason.NAMESPACE_NOT_FOUND,
    );
  });

  it("answers 400 naming the field for a negative limit or a duration under 1000 ms", async () => {
    const { client, c } = await withNamespace();
    const bad = [
      [{ limit: -1n, duration: 1000n }, "/limit"],
      [{ limit: 1n, duration: 999n }, "/duration"],
      [{ limit: 1n, duration: 1000n, identifier: "" }, "/identifier"],
    ] as const;
    for (const [over, location] of bad) {
      const err = await rejection(
        client.setOverride({ caller: c, namespace: "api.requests", identifier: "a", ...over }),
        ErrorReason.INVALID_INPUT,
      );
      expect(errorDetailOf(err)?.violations[0]?.location).toBe(location);
    }
  });
});
