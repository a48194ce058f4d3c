import { describe, expect, it } from "vitest";
import { OldestFirst } from "./oldest-first.ts";

/** a to d, inserted in that order. */
const fourKeys = () =>
  new Map([
    ["a", 1],
    ["b", 2],
    ["c", 3],
    ["d", 4],
  ]);

describe("OldestFirst", () => {
  it("hands out keys oldest first, past keys deleted elsewhere and behind keys re-inserted", () => {
    const map = fourKeys();
    const oldest = new OldestFirst(map);
    expect(oldest.next()).toBe("a");
    map.delete("a");
    map.delete("c");
    // Re-inserting moves b behind d.
    map.delete("b");
    map.set("b", 2);
    map.set("e", 5);
    const order: string[] = [];
    for (let key = oldest.next(); key !== undefined; key = oldest.next()) {
      order.push(key);
      map.delete(key);
    }
    expect(order).toEqual(["d", "b", "e"]);
  });

  it("starts again once it has been through every key, and after a clear", () => {
    const map = new Map<string, number>();
    const oldest = new OldestFirst(map);
    expect(oldest.next()).toBeUndefined();
    map.set("a", 1);
    expect(oldest.next()).toBe("a");
    map.delete("a");
    expect(oldest.next()).toBeUndefined();
    map.set("b", 2);
    map.set("c", 3);
    map.clear();
    map.set("d", 4);
    expect(oldest.next()).toBe("d");
  });

  it("trims the Map to at most max keys, oldest first, and leaves one within it alone", () => {
    const map = fourKeys();
    const oldest = new OldestFirst(map);
    oldest.trim(4);
    expect([...map.keys()]).toEqual(["a", "b", "c", "d"]);
    oldest.trim(2);
    expect([...map.keys()]).toEqual(["c", "d"]);
    map.set("e", 5);
    oldest.trim(0);
    expect(map.size).toBe(0);
  });

  it("evicts from a full Map of 100,000 in well under 10 µs an eviction", () => {
    const map = new Map<string, number>();
    for (let i = 0; i < 100_000; i++) map.set(`k${i}`, i);
    const oldest = new OldestFirst(map);
    // 100,000 inserts, each evicting the oldest: about 50 ms here; with keys().next() 1 to 7 s.
    const started = performance.now();
    for (let i = 100_000; i < 200_000; i++) {
      map.set(`k${i}`, i);
      map.delete(oldest.next()!);
    }
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(map.size).toBe(100_000);
    expect(map.has("k99999")).toBe(false);
    expect(map.has("k100000")).toBe(true);
  });
});
