import { describe, expect, it } from "vitest";
import { NamespaceCache } from "./namespaces.ts";
import { MemoryRatelimitStore } from "./store/memory-ratelimit-store.ts";

describe("NamespaceCache", () => {
  it("keeps at most max entries (a namespace takes two: id and name), the least recently used leaving first", async () => {
    const store = new MemoryRatelimitStore();
    const cache = new NamespaceCache(store, 4);
    const [a, b, c] = [
      await store.createNamespace("ws_1", "a"),
      await store.createNamespace("ws_1", "b"),
      await store.createNamespace("ws_1", "c"),
    ];
    for (const ns of [a, b, c]) expect((await cache.find("ws_1", ns.name))?.id).toBe(ns.id);
    const held = () =>
      [a, b, c].map((ns) => [
        cache.peek("ws_1", ns.name) !== undefined,
        cache.peek("ws_1", ns.id) !== undefined,
      ]);
    expect(held()).toEqual([
      [false, false],
      [true, true],
      [true, true],
    ]);
    expect((await cache.find("ws_1", a.id))?.name).toBe("a");
    expect(held()).toEqual([
      [true, true],
      [false, false],
      [true, true],
    ]);
  });

  it("keeps a namespace in use while newly found ones push out those not used since", async () => {
    const store = new MemoryRatelimitStore();
    const cache = new NamespaceCache(store, 4);
    const [a, b, c] = [
      await store.createNamespace("ws_1", "a"),
      await store.createNamespace("ws_1", "b"),
      await store.createNamespace("ws_1", "c"),
    ];
    await cache.find("ws_1", "a");
    await cache.find("ws_1", "b");
    // a, found first, is checked by name and by id again; then c needs room.
    expect(cache.peek("ws_1", "a")?.id).toBe(a.id);
    expect(cache.peek("ws_1", a.id)?.name).toBe("a");
    await cache.find("ws_1", "c");
    expect(cache.peek("ws_1", "a")?.id).toBe(a.id);
    expect(cache.peek("ws_1", a.id)?.name).toBe("a");
    expect(cache.peek("ws_1", "b")).toBeUndefined();
    expect(cache.peek("ws_1", b.id)).toBeUndefined();
    expect(cache.peek("ws_1", "c")?.id).toBe(c.id);
  });
});
