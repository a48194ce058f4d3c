/**
 * Rendezvous (highest random weight) hashing: every replica computes the same
 * owner for a key from the same peer list, and removing a peer moves only the
 * keys it owned.
 */
export class Rendezvous {
  private readonly seeds: { peer: string; seed: number }[];

  constructor(peers: readonly string[]) {
    if (peers.length === 0) throw new Error("rendezvous hashing needs at least one peer");
    this.seeds = [...new Set(peers)].sort().map((peer) => ({ peer, seed: hash53(peer, 0x9e3779b9) }));
  }

  owner(key: string): string {
    let best = this.seeds[0]!.peer;
    let bestScore = -1;
    for (const { peer, seed } of this.seeds) {
      const score = hash53(key, seed);
      if (score > bestScore) {
        bestScore = score;
        best = peer;
      }
    }
    return best;
  }
}

/** cyrb53: a fast, well-mixed 53-bit string hash (public domain, bryc). */
export function hash53(s: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
