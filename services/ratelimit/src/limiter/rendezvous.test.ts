import { describe, expect, it } from "vitest";
import { Rendezvous } from "./rendezvous.ts";

const peers = ["http://a:7072", "http://b:7072", "http://c:7072"];
const keys = Array.from({ length: 3000 }, (_, i) => `ws_1\u001frlns_1\u001fuser_${i}`);

describe("rendezvous hashing", () => {
  it("gives every replica the same owner whatever the order of the peer list", () => {
    const one = new Rendezvous(peers);
    const other = new Rendezvous([...peers].reverse());
    for (const k of keys) expect(other.owner(k)).toBe(one.owner(k));
  });

  it("spreads keys over the replicas roughly evenly", () => {
    const ring = new Rendezvous(peers);
    const counts = new Map<string, number>();
    for (const k of keys) counts.set(ring.owner(k), (counts.get(ring.owner(k)) ?? 0) + 1);
    for (const p of peers) expect(counts.get(p)).toBeGreaterThan(800);
  });

  it("moves only the keys of a removed replica", () => {
    const before = new Rendezvous(peers);
    const after = new Rendezvous(peers.slice(0, 2));
    for (const k of keys) {
      if (before.owner(k) !== peers[2]) expect(after.owner(k)).toBe(before.owner(k));
    }
  });
});
