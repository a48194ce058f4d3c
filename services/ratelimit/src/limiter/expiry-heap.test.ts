import { describe, expect, it } from "vitest";
import { ExpiryHeap } from "./expiry-heap.ts";

describe("ExpiryHeap", () => {
  it("pops ids in order of expiry, whatever the order pushed, duplicates included", () => {
    const heap = new ExpiryHeap();
    const at = Array.from({ length: 500 }, (_, i) => (i * 7919) % 97);
    at.forEach((t, i) => {
      heap.push(t, `c${i}`);
    });
    expect(heap.size).toBe(500);
    const popped: number[] = [];
    while (heap.size > 0) {
      const before = heap.peek();
      const id = heap.pop()!;
      expect(at[Number(id.slice(1))]).toBe(before);
      popped.push(before);
    }
    expect(popped).toEqual([...at].sort((x, y) => x - y));
    expect(heap.pop()).toBeUndefined();
    expect(heap.peek()).toBe(Number.POSITIVE_INFINITY);
  });

  it("keeps its order when pushes and pops interleave", () => {
    const heap = new ExpiryHeap();
    let seed = 1;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed % 1000;
    };
    const held: number[] = [];
    for (let step = 0; step < 2000; step++) {
      if (held.length > 0 && random() < 400) {
        held.sort((x, y) => x - y);
        expect(heap.peek()).toBe(held[0]);
        heap.pop();
        held.shift();
      } else {
        const t = random();
        heap.push(t, String(t));
        held.push(t);
      }
    }
    expect(heap.size).toBe(held.length);
  });
});
