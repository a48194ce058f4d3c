import { create, toBinary } from "@bufbuild/protobuf";
import { OverridesChangedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { MemoryBus } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { SUBJECT_OVERRIDES_CHANGED } from "./events.ts";
import { OverrideCache, OverrideSet } from "./overrides.ts";
import { MemoryRatelimitStore } from "./store/memory-ratelimit-store.ts";
import type { Override } from "./store/ratelimit-store.ts";

const o = (identifier: string): Override => ({
  id: `rlor_${identifier}`,
  namespaceId: "rlns_1",
  identifier,
  limit: 1,
  duration: 1000,
});

describe("override matching", () => {
  it("prefers an exact identifier over every wildcard", () => {
    const set = new OverrideSet([o("*"), o("user_*"), o("user_1")]);
    expect(set.match("user_1")?.identifier).toBe("user_1");
  });

  it("prefers the wildcard with the longest literal part, whatever the order given", () => {
    const all = [o("*"), o("*@acme.com"), o("user_*@acme.com"), o("user_*")];
    for (const order of [all, [...all].reverse()]) {
      const set = new OverrideSet(order);
      expect(set.match("user_9@acme.com")?.identifier).toBe("user_*@acme.com");
      expect(set.match("ann@acme.com")?.identifier).toBe("*@acme.com");
      expect(set.match("user_9")?.identifier).toBe("user_*");
      expect(set.match("zed")?.identifier).toBe("*");
    }
  });

  it("breaks a tie of equally specific wildcards by identifier order", () => {
    const set = new OverrideSet([o("b*"), o("*a")]);
    // Both have one literal character and both match "ba": "*a" sorts before "b*".
    expect(set.match("ba")?.identifier).toBe("*a");
    expect(new OverrideSet([o("*a"), o("b*")]).match("ba")?.identifier).toBe("*a");
  });

  it("anchors patterns, lets * match any sequence including none, and takes other characters literally", () => {
    const set = new OverrideSet([o("user_*_prod"), o("a.b+(c)")]);
    expect(set.match("user__prod")?.identifier).toBe("user_*_prod");
    expect(set.match("user_x/y_prod")?.identifier).toBe("user_*_prod");
    expect(set.match("xuser_1_prod")).toBeUndefined();
    expect(set.match("user_1_prod2")).toBeUndefined();
    expect(set.match("a.b+(c)")?.identifier).toBe("a.b+(c)");
    expect(set.match("aXb+(c)")).toBeUndefined();
  });

  it("matches nothing when a namespace has no overrides", () => {
    expect(OverrideSet.EMPTY.match("anything")).toBeUndefined();
  });
});

describe("override cache", () => {
  it("loads once, and reloads after an overrides_changed message on the bus", async () => {
    const store = new MemoryRatelimitStore();
    const bus = new MemoryBus();
    const cache = new OverrideCache(store, bus);
    const ns = await store.createNamespace("ws_1", "n");
    expect((await cache.get(ns.id)).match("a")).toBeUndefined();
    await store.setOverride({ namespaceId: ns.id, identifier: "a", limit: 5, duration: 1000 });
    expect(cache.peek(ns.id)?.match("a")).toBeUndefined(); // still the cached set
    bus.publish(
      SUBJECT_OVERRIDES_CHANGED,
      toBinary(
        OverridesChangedSchema,
        create(OverridesChangedSchema, { workspaceId: "ws_1", namespaceId: ns.id }),
      ),
    );
    expect(cache.peek(ns.id)).toBeUndefined();
    expect((await cache.get(ns.id)).match("a")?.limit).toBe(5);
  });

  it("keeps at most maxNamespaces namespaces' overrides, the least recently used leaving first", async () => {
    const store = new MemoryRatelimitStore();
    const cache = new OverrideCache(store, new MemoryBus(), 2);
    const ids: string[] = [];
    for (const name of ["a", "b", "c"]) ids.push((await store.createNamespace("ws_1", name)).id);
    for (const id of ids) await cache.get(id);
    expect(ids.map((id) => cache.peek(id) !== undefined)).toEqual([false, true, true]);
    await cache.get(ids[0]!);
    expect(ids.map((id) => cache.peek(id) !== undefined)).toEqual([true, false, true]);
  });

  it("keeps a namespace's overrides in use while newly loaded ones push out those not used since", async () => {
    const store = new MemoryRatelimitStore();
    const cache = new OverrideCache(store, new MemoryBus(), 2);
    const ids: string[] = [];
    for (const name of ["a", "b", "c"]) ids.push((await store.createNamespace("ws_1", name)).id);
    await cache.get(ids[0]!);
    await cache.get(ids[1]!);
    // a, loaded first, is checked again; then c needs room.
    expect(cache.peek(ids[0]!)).toBeDefined();
    await cache.get(ids[2]!);
    expect(ids.map((id) => cache.peek(id) !== undefined)).toEqual([true, false, true]);
  });

  it("does not keep a load that a change overtook", async () => {
    const store = new MemoryRatelimitStore();
    const cache = new OverrideCache(store, new MemoryBus());
    const ns = await store.createNamespace("ws_1", "n");
    const stale = cache.get(ns.id);
    cache.invalidate(ns.id);
    await stale;
    expect(cache.peek(ns.id)).toBeUndefined();
  });

  it("shares one load among concurrent checks", async () => {
    const store = new MemoryRatelimitStore();
    let loads = 0;
    const counting = Object.assign(Object.create(store), {
      allOverrides: (id: string) => {
        loads++;
        return store.allOverrides(id);
      },
    });
    const cache = new OverrideCache(counting, new MemoryBus());
    await Promise.all(Array.from({ length: 50 }, () => cache.get("rlns_1")));
    expect(loads).toBe(1);
  });
});
