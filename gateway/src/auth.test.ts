import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason, hashKey, TestClock } from "@latchkey/runtime";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { isGeneratedShape, RootKeyAuth, type RootKeyAuthOptions } from "./auth.ts";
import { type RequestOrigin, TrustedProxies } from "./client-address.ts";
import { Problem } from "./problem.ts";

/** A token of a root key's length and prefix, but not the generated shape ("0" is no base58 digit). */
const rootKeyLike = () => `lk_root_0${randomBytes(24).toString("base64url")}`;
/** A root key as `latchkey root-key create` makes them (services/keys/src/admin.ts). */
const generatedRootKey = () => `lk_root_${bs58.encode(randomBytes(24))}`;

/**
 * RootKeyAuth over a fake keys client whose AuthenticateRootKey knows `known` (hash -> workspace),
 * counts every call and how many were out at once; with `hold`, each call waits until `release()`.
 * A plain object rather than a router transport: the flood below makes 20,000 calls.
 */
function fixture(options: Partial<RootKeyAuthOptions> = {}, hold = false) {
  const known = new Map<string, string>();
  const stats = { calls: 0, inFlight: 0, mostInFlight: 0 };
  const held: (() => void)[] = [];
  const keys = {
    async authenticateRootKey(req: { hash: string }) {
      stats.calls++;
      stats.inFlight++;
      stats.mostInFlight = Math.max(stats.mostInFlight, stats.inFlight);
      try {
        if (hold) await new Promise<void>((r) => held.push(r));
        const workspaceId = known.get(req.hash);
        if (workspaceId === undefined) throw domainError(ErrorReason.UNAUTHENTICATED, "unknown root key");
        return { caller: create(CallerSchema, { workspaceId, permissions: ["*"] }) };
      } finally {
        stats.inFlight--;
      }
    },
  } as unknown as Client<typeof KeysService>;
  const clock = new TestClock();
  const auth = new RootKeyAuth(keys, clock, { ttlMs: 60_000, ...options });
  const add = (plaintext: string, workspaceId: string) => known.set(hashKey(plaintext), workspaceId);
  const release = () => {
    for (const r of held.splice(0)) r();
  };
  return { auth, stats, clock, add, release, held };
}

/** What authenticate throws, as status and type, or "ok". */
async function outcome(auth: RootKeyAuth, header: string): Promise<string> {
  try {
    await auth.authenticate(header);
    return "ok";
  } catch (err) {
    if (err instanceof Problem) return `${err.status} ${err.type.split("/").at(-1)}`;
    throw err;
  }
}

describe("RootKeyAuth", () => {
  it("holds at most maxEntries root keys, the least recently used leaving first", async () => {
    const { auth, stats, add } = fixture({ maxEntries: 2 });
    const [one, two, three] = [rootKeyLike(), rootKeyLike(), rootKeyLike()];
    add(one, "ws_1");
    add(two, "ws_2");
    add(three, "ws_3");
    for (const key of [one, two, three]) await auth.authenticate(`Bearer ${key}`);
    expect(stats.calls).toBe(3);
    // two and three are held; one was dropped when three came, and is asked for again.
    expect((await auth.authenticate(`Bearer ${two}`)).workspaceId).toBe("ws_2");
    expect((await auth.authenticate(`Bearer ${three}`)).workspaceId).toBe("ws_3");
    expect(stats.calls).toBe(3);
    expect((await auth.authenticate(`Bearer ${one}`)).workspaceId).toBe("ws_1");
    expect(stats.calls).toBe(4);
    // Now two, the least recently used, has left.
    expect((await auth.authenticate(`Bearer ${three}`)).workspaceId).toBe("ws_3");
    expect((await auth.authenticate(`Bearer ${two}`)).workspaceId).toBe("ws_2");
    expect(stats.calls).toBe(5);
    auth.close();
  });

  it("keeps a root key in use while newly resolved ones push out those not used since", async () => {
    const { auth, stats, add } = fixture({ maxEntries: 2 });
    const [busy, idle, fresh] = [rootKeyLike(), rootKeyLike(), rootKeyLike()];
    add(busy, "ws_busy");
    add(idle, "ws_idle");
    add(fresh, "ws_fresh");
    await auth.authenticate(`Bearer ${busy}`);
    await auth.authenticate(`Bearer ${idle}`);
    // busy, resolved first, is used again; then fresh needs room.
    expect(auth.cached(`Bearer ${busy}`)?.workspaceId).toBe("ws_busy");
    await auth.authenticate(`Bearer ${fresh}`);
    expect(stats.calls).toBe(3);
    expect(auth.cached(`Bearer ${busy}`)?.workspaceId).toBe("ws_busy");
    expect(auth.cached(`Bearer ${idle}`)).toBeUndefined();
    expect((await auth.authenticate(`Bearer ${busy}`)).workspaceId).toBe("ws_busy");
    expect(stats.calls).toBe(3);
    auth.close();
  });

  it("answers a token no root key can be without asking: too short, too long, or not visible ASCII", async () => {
    const { auth, stats } = fixture();
    for (const token of ["short_token", "x".repeat(15), "x".repeat(257), `lk_root_${"é".repeat(20)}`]) {
      expect(await outcome(auth, `Bearer ${token}`), token).toBe("401 key_not_found");
    }
    expect(stats.calls).toBe(0);
    // The shortest and the longest a root key may be are asked about.
    expect(await outcome(auth, `Bearer ${"x".repeat(16)}`)).toBe("401 key_not_found");
    expect(await outcome(auth, `Bearer ${"x".repeat(256)}`)).toBe("401 key_not_found");
    expect(stats.calls).toBe(2);
  });

  it("remembers an unknown root key for unknownTtlMs, apart from the known ones", async () => {
    const { auth, stats, clock, add } = fixture({ unknownTtlMs: 1_000 });
    const bogus = rootKeyLike();
    expect(await outcome(auth, `Bearer ${bogus}`)).toBe("401 key_not_found");
    expect(await outcome(auth, `Bearer ${bogus}`)).toBe("401 key_not_found");
    expect(stats.calls).toBe(1);
    // Created a moment later, it works once the unknown entry has expired.
    add(bogus, "ws_1");
    clock.advance(1_001);
    expect(await outcome(auth, `Bearer ${bogus}`)).toBe("ok");
    expect(stats.calls).toBe(2);
  });

  it("keeps a cached root key cached through a flood of 100,000 distinct bogus tokens, looking up at most lookupsPerSecond a second, the reserve aside", async () => {
    const { auth, stats, add, clock } = fixture({ maxEntries: 1_000, maxUnknown: 10_000 });
    const valid = rootKeyLike();
    add(valid, "ws_valid");
    const header = `Bearer ${valid}`;
    expect((await auth.authenticate(header)).workspaceId).toBe("ws_valid");
    expect(stats.calls).toBe(1);
    clock.advance(1_000);

    // Four shapes no root key has, and one a root key may have (not the generated shape).
    const shapes = [
      (i: number) => `b${i}`,
      (i: number) => `${"x".repeat(300)}${i}`,
      (i: number) => `lk_root_\u00ff${i}_padding_padding`,
      (i: number) => `lk_root_${i}\u0001_padding_padding`,
      () => rootKeyLike(),
    ];
    const perShape = 20_000;
    const answers = new Map<string, number>();
    for (const shape of shapes) {
      for (let wave = 0; wave < perShape; wave += 500) {
        const outcomes = await Promise.all(
          Array.from({ length: 500 }, (_, i) => outcome(auth, `Bearer ${shape(wave + i)}`)),
        );
        for (const o of outcomes) answers.set(o, (answers.get(o) ?? 0) + 1);
      }
    }
    // Only the plausible shape cost lookups: a second's worth less the reserve (80), the rest 503 unasked.
    expect(Object.fromEntries(answers)).toEqual({
      "401 key_not_found": 4 * perShape + 80,
      "503 service_unavailable": perShape - 80,
    });
    expect(stats.calls).toBe(1 + 80);

    // The valid root key is still cached: no promise, no call.
    expect(auth.cached(header)?.workspaceId).toBe("ws_valid");
    expect((await auth.authenticate(header)).workspaceId).toBe("ws_valid");
    expect(stats.calls).toBe(1 + 80);
    // And a new root key of the generated shape is served from the reserve, in the same instant.
    const fresh = generatedRootKey();
    add(fresh, "ws_fresh");
    expect((await auth.authenticate(`Bearer ${fresh}`)).workspaceId).toBe("ws_fresh");
    expect(stats.calls).toBe(1 + 81);
    auth.close();
  }, 120_000);

  it("starts at most lookupsPerSecond lookups of new tokens a second, a second's worth at once", async () => {
    const { auth, stats, clock } = fixture({ lookupsPerSecond: 10, reservedLookups: 0 });
    const burst = await Promise.all(
      Array.from({ length: 15 }, () => outcome(auth, `Bearer ${rootKeyLike()}`)),
    );
    expect(burst.filter((o) => o === "401 key_not_found")).toHaveLength(10);
    expect(burst.filter((o) => o === "503 service_unavailable")).toHaveLength(5);
    expect(stats.calls).toBe(10);
    clock.advance(100);
    expect(await outcome(auth, `Bearer ${rootKeyLike()}`)).toBe("401 key_not_found");
    expect(await outcome(auth, `Bearer ${rootKeyLike()}`)).toBe("503 service_unavailable");
    // A long quiet spell refills a second's worth, no more.
    clock.advance(60_000);
    const later = await Promise.all(
      Array.from({ length: 15 }, () => outcome(auth, `Bearer ${rootKeyLike()}`)),
    );
    expect(later.filter((o) => o === "401 key_not_found")).toHaveLength(10);
    expect(stats.calls).toBe(21);
  });

  it("keeps at most maxLookups lookups of new tokens out and maxWaiting waiting; beyond, answers 503 at once", async () => {
    const { auth, stats, release, held } = fixture(
      { maxLookups: 4, maxWaiting: 10, lookupsPerSecond: 1_000 },
      true,
    );
    const settled = Array.from({ length: 100 }, () => outcome(auth, `Bearer ${rootKeyLike()}`));
    // The 86 that find no room are answered while the rest wait.
    const early = await Promise.race([
      Promise.all(settled.slice(14)),
      new Promise((r) => setTimeout(() => r("timeout"), 5_000)),
    ]);
    expect(early).toEqual(Array(86).fill("503 service_unavailable"));
    expect(held.length).toBe(4);
    while (held.length > 0) {
      release();
      await new Promise((r) => setTimeout(r, 1));
    }
    expect(await Promise.all(settled.slice(0, 14))).toEqual(Array(14).fill("401 key_not_found"));
    expect(stats.calls).toBe(14);
    expect(stats.mostInFlight).toBe(4);
  });

  it("refreshes a known root key whose TTL ran out even while new tokens fill every lookup", async () => {
    const { auth, stats, clock, add, release, held } = fixture(
      { ttlMs: 5_000, maxLookups: 2, maxWaiting: 2, lookupsPerSecond: 1_000 },
      true,
    );
    const valid = rootKeyLike();
    add(valid, "ws_valid");
    const first = auth.authenticate(`Bearer ${valid}`);
    release();
    await new Promise((r) => setTimeout(r, 1));
    release();
    expect((await first).workspaceId).toBe("ws_valid");
    clock.advance(5_001);
    const flood = Array.from({ length: 10 }, () => outcome(auth, `Bearer ${rootKeyLike()}`));
    const refreshed = auth.authenticate(`Bearer ${valid}`);
    await new Promise((r) => setTimeout(r, 10));
    // Two new tokens out, and the known key's refresh beside them.
    expect(held.length).toBe(3);
    while (held.length > 0) {
      release();
      await new Promise((r) => setTimeout(r, 1));
    }
    expect((await refreshed).workspaceId).toBe("ws_valid");
    expect((await Promise.all(flood)).filter((o) => o === "503 service_unavailable")).toHaveLength(6);
    expect(stats.calls).toBe(1 + 4 + 1);
  });
});

/** A request's origin: its peer and X-Forwarded-For. */
const from = (peer: string, forwardedFor?: string): RequestOrigin => ({ peer, forwardedFor });

/** What authenticate throws for `token` from `origin`, as status and the start of its detail, or "ok". */
async function verdict(auth: RootKeyAuth, token: string, origin?: RequestOrigin): Promise<string> {
  try {
    await auth.authenticate(`Bearer ${token}`, origin);
    return "ok";
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    if (err.status === 401) return "401";
    return err.detail.includes("for this client") ? "503 client" : "503 all";
  }
}

/** Counts of each verdict for `n` distinct tokens made by `token`, sent from `origin` at once. */
async function flood(auth: RootKeyAuth, n: number, token: () => string, origin?: RequestOrigin) {
  const counts: Record<string, number> = {};
  const verdicts = await Promise.all(Array.from({ length: n }, () => verdict(auth, token(), origin)));
  for (const v of verdicts) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

describe("RootKeyAuth, per client", () => {
  it("tells the generated shape: lk_root_ and the base58 of exactly 24 bytes", () => {
    for (let i = 0; i < 200; i++) expect(isGeneratedShape(generatedRootKey())).toBe(true);
    expect(isGeneratedShape(`lk_root_${bs58.encode(randomBytes(23))}`)).toBe(false);
    expect(isGeneratedShape(`lk_root_${bs58.encode(randomBytes(25))}`)).toBe(false);
    expect(isGeneratedShape(`lk_root_${"z".repeat(33)}`)).toBe(false); // over 2^192
    expect(isGeneratedShape(`lk_root_${"1".repeat(24)}`)).toBe(true); // 24 zero bytes
    expect(isGeneratedShape(rootKeyLike())).toBe(false);
    expect(isGeneratedShape(`sk_root_${bs58.encode(randomBytes(24))}`)).toBe(false);
    expect(isGeneratedShape("my-own-root-key-0123456789")).toBe(false);
  });

  it("spends a flood of distinct tokens from one address from that address's budget: a fresh root key from another address is served", async () => {
    const { auth, stats, clock, add } = fixture({ maxUnknown: 10_000 });
    const flooder = from("203.0.113.7");
    expect(await flood(auth, 5_000, rootKeyLike, flooder)).toEqual({ "401": 20, "503 client": 4_980 });
    expect(stats.calls).toBe(20);
    // A LATCHKEY_ROOT_KEY of the operator's own shape, and a generated one, from elsewhere.
    const own = "operator-chosen-root-key-0001";
    const generated = generatedRootKey();
    add(own, "ws_own");
    add(generated, "ws_generated");
    expect(await verdict(auth, own, from("198.51.100.20"))).toBe("ok");
    expect(await verdict(auth, generated, from("198.51.100.21"))).toBe("ok");
    // A second later the flooder has a second's worth again, no more.
    clock.advance(1_000);
    expect(await flood(auth, 1_000, rootKeyLike, flooder)).toEqual({ "401": 20, "503 client": 980 });
    expect(stats.calls).toBe(20 + 2 + 20);
    auth.close();
  });

  it("serves a fresh root key of the generated shape from the flooded address itself, from the reserve; not one of another shape, nor a flood of the generated shape past its share", async () => {
    const { auth, stats, add } = fixture({ maxUnknown: 10_000 });
    const shared = from("203.0.113.7");
    expect(await flood(auth, 2_000, rootKeyLike, shared)).toEqual({ "401": 20, "503 client": 1_980 });
    const generated = generatedRootKey();
    const own = "operator-chosen-root-key-0002";
    add(generated, "ws_generated");
    add(own, "ws_own");
    expect(await verdict(auth, generated, shared)).toBe("ok");
    expect(await verdict(auth, own, shared)).toBe("503 client");
    expect(stats.calls).toBe(21);
    // Forged in the generated shape, the flood takes the rest of this address's share (5), no more.
    expect(await flood(auth, 1_000, generatedRootKey, shared)).toEqual({ "401": 4, "503 client": 996 });
    const another = generatedRootKey();
    add(another, "ws_another");
    expect(await verdict(auth, another, shared)).toBe("503 client");
    expect(await verdict(auth, another, from("198.51.100.9"))).toBe("ok");
    expect(stats.calls).toBe(26);
    auth.close();
  });

  it("keeps the reserve from a flood of other shapes from many addresses: only the generated shape is served then", async () => {
    const { auth, stats, add } = fixture({ maxUnknown: 10_000 });
    let n = 0;
    // 200 addresses, 5 tokens each: the whole budget down to the reserve (80 lookups), then 503 for all.
    const counts: Record<string, number> = {};
    for (let i = 0; i < 200; i++) {
      const got = await flood(auth, 5, () => `${rootKeyLike()}${n++}`, from(`198.18.${i >> 8}.${i & 255}`));
      for (const [k, v] of Object.entries(got)) counts[k] = (counts[k] ?? 0) + v;
    }
    expect(counts).toEqual({ "401": 80, "503 all": 920 });
    const own = "operator-chosen-root-key-0003";
    const generated = generatedRootKey();
    add(own, "ws_own");
    add(generated, "ws_generated");
    expect(await verdict(auth, own, from("192.0.2.1"))).toBe("503 all");
    expect(await verdict(auth, generated, from("192.0.2.1"))).toBe("ok");
    expect(stats.calls).toBe(81);
    auth.close();
  });

  it("ignores X-Forwarded-For from a peer it does not trust, and walks it from the right from one it does", async () => {
    const { auth, add } = fixture({
      maxUnknown: 10_000,
      trustedProxies: TrustedProxies.parse("10.0.0.0/8, 2001:db8:ffff::1"),
    });
    // Not trusted: each request claims another address, and all are the peer's.
    let i = 0;
    const claims = await Promise.all(
      Array.from({ length: 100 }, () =>
        verdict(auth, rootKeyLike(), from("203.0.113.7", `198.51.100.${i++ % 250}`)),
      ),
    );
    expect(claims.filter((v) => v === "401")).toHaveLength(20);
    const own = "operator-chosen-root-key-0004";
    add(own, "ws_own");
    expect(await verdict(auth, own, from("203.0.113.7", "192.0.2.99"))).toBe("503 client");
    // Trusted: the proxy appended the address it saw; what the client put left of it is not believed.
    const behind = (xff: string) => from("10.1.2.3", xff);
    expect(await flood(auth, 100, rootKeyLike, behind("192.0.2.10, 10.9.9.9"))).toEqual({
      "401": 20,
      "503 client": 80,
    });
    expect(await verdict(auth, own, behind("1.1.1.1, 192.0.2.10"))).toBe("503 client");
    expect(await verdict(auth, own, behind("192.0.2.10, 10.0.0.7"))).toBe("503 client");
    expect(await verdict(auth, own, behind("192.0.2.11"))).toBe("ok");
    // A trusted IPv6 proxy; the client's whole /64 is one client.
    const v6 = (xff: string) => from("2001:db8:ffff::1", xff);
    expect(await flood(auth, 50, rootKeyLike, v6("2001:db8:1:2::a"))).toEqual({
      "401": 20,
      "503 client": 30,
    });
    auth.close();
    const other = "operator-chosen-root-key-0005";
    const again = fixture({ trustedProxies: TrustedProxies.parse("2001:db8:ffff::1") });
    await flood(again.auth, 20, rootKeyLike, v6("2001:db8:1:2::a"));
    again.add(other, "ws_other");
    expect(await verdict(again.auth, other, v6("2001:db8:1:2:ffff::b"))).toBe("503 client");
    expect(await verdict(again.auth, other, v6("2001:db8:1:3::a"))).toBe("ok");
    again.auth.close();
  });

  it("keeps at most maxClients budgets through a spray of 10,000 addresses, and a client that keeps flooding amid it is not given a fresh budget", async () => {
    const { auth, clock } = fixture({ maxUnknown: 100_000, lookupsPerSecond: 5_000, maxClients: 50 });
    const flooder = from("203.0.113.7");
    let flooderLookups = 0;
    let most = 0;
    for (let i = 0; i < 10_000; i++) {
      clock.advance(1);
      expect(await verdict(auth, rootKeyLike(), from(`198.18.${i >> 8}.${i & 255}`))).toBe("401");
      if ((await verdict(auth, rootKeyLike(), flooder)) === "401") flooderLookups++;
      most = Math.max(most, auth.clientsKept);
    }
    expect(most).toBe(50);
    expect(auth.clientsKept).toBe(50);
    // 20 at once, then 20 a second for 10 s (one fewer when the refill's sum of fractions rounds
    // under): were it evicted and refilled, it would have had thousands.
    expect(flooderLookups).toBeGreaterThanOrEqual(20 + 199);
    expect(flooderLookups).toBeLessThanOrEqual(20 + 200);
    auth.close();
  }, 60_000);

  it("reads no origin for a cached root key, nor to refuse a token without a lookup", async () => {
    const { auth, add } = fixture();
    const valid = generatedRootKey();
    add(valid, "ws_valid");
    let reads = 0;
    const counting: RequestOrigin = {
      get peer() {
        reads++;
        return "203.0.113.7";
      },
      get forwardedFor() {
        reads++;
        return undefined;
      },
    };
    expect((await auth.authenticate(`Bearer ${valid}`, counting)).workspaceId).toBe("ws_valid");
    const first = reads;
    expect(first).toBeGreaterThan(0);
    expect(auth.cached(`Bearer ${valid}`)?.workspaceId).toBe("ws_valid");
    expect((await auth.authenticate(`Bearer ${valid}`, counting)).workspaceId).toBe("ws_valid");
    expect(await verdict(auth, "short", counting)).toBe("401");
    expect(reads).toBe(first);
    auth.close();
  });
});
