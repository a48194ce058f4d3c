import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason, hashKey, TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { RootKeyAuth, type RootKeyAuthOptions } from "./auth.ts";
import { Problem } from "./problem.ts";

/** A root key as `latchkey root-key create` makes them. */
const rootKeyLike = () => `lk_root_${randomBytes(24).toString("base64url")}`;

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
  it("holds at most maxEntries root keys, the oldest resolved leaving first", async () => {
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
    // Now two, the oldest resolved, has left.
    expect((await auth.authenticate(`Bearer ${three}`)).workspaceId).toBe("ws_3");
    expect((await auth.authenticate(`Bearer ${two}`)).workspaceId).toBe("ws_2");
    expect(stats.calls).toBe(5);
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

  it("keeps a cached root key cached through a flood of 100,000 distinct bogus tokens, looking up at most lookupsPerSecond a second", async () => {
    const { auth, stats, add, clock } = fixture({ maxEntries: 1_000, maxUnknown: 10_000 });
    const valid = rootKeyLike();
    add(valid, "ws_valid");
    const header = `Bearer ${valid}`;
    expect((await auth.authenticate(header)).workspaceId).toBe("ws_valid");
    expect(stats.calls).toBe(1);
    clock.advance(1_000);

    // Four shapes no root key has, and one every generated root key has.
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
    // Only the plausible shape cost lookups: a second's worth (100), the rest answered 503 unasked.
    expect(Object.fromEntries(answers)).toEqual({
      "401 key_not_found": 4 * perShape + 100,
      "503 service_unavailable": perShape - 100,
    });
    expect(stats.calls).toBe(1 + 100);

    // The valid root key is still cached: no promise, no call.
    expect(auth.cached(header)?.workspaceId).toBe("ws_valid");
    expect((await auth.authenticate(header)).workspaceId).toBe("ws_valid");
    expect(stats.calls).toBe(1 + 100);
    auth.close();
  }, 120_000);

  it("starts at most lookupsPerSecond lookups of new tokens a second, a second's worth at once", async () => {
    const { auth, stats, clock } = fixture({ lookupsPerSecond: 10 });
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
