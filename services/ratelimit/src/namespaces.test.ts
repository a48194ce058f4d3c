import { describe, expect, it } from "vitest";
import { NamespaceCache } from "./namespaces.ts";
import { MemoryRatelimitStore } from "./store/memory-ratelimit-store.ts";

describe("NamespaceCache", () => {
  it("keeps at most max entries (a namespace takes two: id and name), the oldest found leaving first", async () => {
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
});
