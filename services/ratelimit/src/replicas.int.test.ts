import { type Client, createClient } from "@connectrpc/connect";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import {
  createLogger,
  InternalAuth,
  internalTransport,
  MemoryBus,
  migrate,
  type ServedRpc,
  serveRpc,
  TestClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { freePort } from "@latchkey/runtime/testing/free-port";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller, LIMITER } from "../testing/in-memory-ratelimit.ts";
import { counterKey } from "./checks.ts";
import { createRatelimitDeps, type RatelimitDeps } from "./deps.ts";
import { PeerLimiter } from "./limiter/peer-limiter.ts";
import { Rendezvous } from "./limiter/rendezvous.ts";
import { SlidingWindows } from "./limiter/sliding-windows.ts";
import { ratelimitMigrations } from "./migrations.ts";
import { namedCounterKey } from "./named-limits.ts";
import { ratelimitRoutes } from "./routes.ts";

/** Two replicas in this process, each serving over real HTTP, sharing one database and one bus. */
let db: TestDatabase;
const replicas: {
  url: string;
  deps: RatelimitDeps;
  served: ServedRpc;
  client: Client<typeof RatelimitService>;
}[] = [];
const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 5));
const c = caller("ws_1", ...LIMITER);
// Replicas sign their forwards and refuse unsigned calls, as in production.
const auth = new InternalAuth(["replicas-test-secret-replicas-test-secret"]);

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "ratelimit", ratelimitMigrations);
  const bus = new MemoryBus();
  const ports = [await freePort(), await freePort()];
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  for (const [i, url] of urls.entries()) {
    const deps = createRatelimitDeps({
      sql: db.sql,
      bus,
      clock,
      log: createLogger("ratelimit", "silent"),
      peers: { self: url, peers: urls, transport: (peer) => internalTransport(peer, { auth }) },
      // Far above what the other tests hold per workspace; the flood test below reaches it.
      maxCountersPerWorkspace: 100,
    });
    const served = await serveRpc(ratelimitRoutes(deps), ports[i]!, undefined, "127.0.0.1", { auth });
    replicas.push({
      url,
      deps,
      served,
      client: createClient(RatelimitService, internalTransport(url, { auth })),
    });
  }
});

afterAll(async () => {
  for (const r of replicas) {
    await r.served.close();
    await r.deps.close();
  }
  await db?.drop();
});

/** Identifiers owned by each replica, so both the local and the forwarded path are exercised. */
async function identifiersByOwner(namespace: string, perOwner: number): Promise<string[][]> {
  await replicas[0]!.client.limit({
    caller: c,
    check: { namespace, identifier: "setup", limit: 1n, duration: 60_000n },
  });
  const ns = (await replicas[0]!.deps.store.namespaceByName("ws_1", namespace))!;
  const ring = new Rendezvous(replicas.map((r) => r.url));
  return replicas.map((r) => {
    const mine: string[] = [];
    for (let i = 0; mine.length < perOwner; i++) {
      if (ring.owner(counterKey("ws_1", ns.id, `user_${i}`)) === r.url) mine.push(`user_${i}`);
    }
    return mine;
  });
}

describe("two replicas sharing one budget", () => {
  it("lets exactly L of N > L concurrent checks through, split evenly across both replicas, for identifiers owned by each (L=100, N=500)", async () => {
    const owned = await identifiersByOwner("shared", 2);
    for (const identifier of owned.flat()) {
      const answers = await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          replicas[i % 2]!.client.limit({
            caller: c,
            check: { namespace: "shared", identifier, limit: 100n, duration: 60_000n },
          }),
        ),
      );
      // Split budgets would admit up to 200; one shared budget admits exactly 100.
      expect(answers.filter((a) => a.result?.success).length, identifier).toBe(100);
    }
  }, 90_000); // 2000 unary calls over HTTP: slow on a loaded machine, not wrong

  it("counts a multiLimit spanning both owners all or nothing, giving back what the passing part counted", async () => {
    const [first, second] = await identifiersByOwner("multi", 1);
    const a = first![0]!;
    const b = second![0]!;
    const check = (identifier: string, limit: bigint, cost = 1n) => ({
      namespace: "multi",
      identifier,
      limit,
      duration: 60_000n,
      cost,
    });
    await replicas[0]!.client.limit({ caller: c, check: check(b, 1n) }); // b is full
    const res = await replicas[0]!.client.multiLimit({ caller: c, checks: [check(a, 5n), check(b, 1n)] });
    expect(res.passed).toBe(false);
    expect(res.results.map((r) => r.success)).toEqual([true, false]);
    // a's owner counted it for a moment and gave it back (locally here: a is owned by replica 0).
    const after = await replicas[1]!.client.limit({ caller: c, check: check(a, 5n, 0n) });
    expect(after.result?.remaining).toBe(5n);
  });

  it("applies an override set through one replica to checks answered by the other", async () => {
    const all = caller("ws_1", ...LIMITER, "ratelimit.*.set_override");
    await replicas[0]!.client.limit({
      caller: all,
      check: { namespace: "ovr", identifier: "vip", limit: 1n, duration: 60_000n },
    });
    await replicas[1]!.client.setOverride({
      caller: all,
      namespace: "ovr",
      identifier: "vip",
      limit: 1000n,
      duration: 60_000n,
    });
    const res = await replicas[0]!.client.limit({
      caller: all,
      check: { namespace: "ovr", identifier: "vip", limit: 1n, duration: 60_000n },
    });
    expect(res.result).toMatchObject({ success: true, limit: 1000n });
  });
});

/** Identity ids whose named limit `name` is owned by each replica. */
function ownersByReplica(name: string, perOwner: number): string[][] {
  const ring = new Rendezvous(replicas.map((r) => r.url));
  return replicas.map((r) => {
    const mine: string[] = [];
    for (let i = 0; mine.length < perOwner; i++) {
      if (ring.owner(namedCounterKey("ws_1", `id_${i}`, name)) === r.url) mine.push(`id_${i}`);
    }
    return mine;
  });
}

describe("named limits through two replicas (CheckNamedLimits)", () => {
  it("lets exactly L of N > L verifications through, batched to both replicas, for identity limits owned by each (L=100, N=500)", async () => {
    for (const owner of ownersByReplica("requests", 1).flat()) {
      const verification = {
        workspaceId: "ws_1",
        limits: [{ owner, name: "requests", limit: 100n, duration: 60_000n }],
      };
      // Ten calls of 50 verifications, alternating between the replicas, all in flight at once.
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          replicas[i % 2]!.client.checkNamedLimits({ groups: Array(50).fill(verification) }),
        ),
      );
      const passed = answers.flatMap((a) => a.groups).filter((g) => g.passed).length;
      expect(passed, owner).toBe(100);
    }
  });

  it("counts a verification whose limits have different owners all or nothing, giving back the passing part", async () => {
    const [[mine], [theirs]] = ownersByReplica("tokens", 1) as [[string], [string]];
    const tokens = (owner: string, limit: bigint, cost?: bigint) => ({
      owner,
      name: "tokens",
      limit,
      duration: 60_000n,
      ...(cost === undefined ? {} : { cost }),
    });
    await replicas[0]!.client.checkNamedLimits({
      groups: [{ workspaceId: "ws_1", limits: [tokens(theirs, 1n)] }],
    });
    const res = await replicas[0]!.client.checkNamedLimits({
      groups: [
        { workspaceId: "ws_1", limits: [tokens(mine, 5n), tokens(theirs, 1n)] },
        { workspaceId: "ws_1", limits: [tokens(mine, 5n, 2n)] },
      ],
    });
    expect(res.groups.map((g) => g.passed)).toEqual([false, true]);
    expect(res.groups[0]!.results.map((r) => r.exceeded)).toEqual([false, true]);
    // Only the second group's 2 stayed on `mine`, whichever replica answers.
    const after = await replicas[1]!.client.checkNamedLimits({
      groups: [{ workspaceId: "ws_1", limits: [tokens(mine, 5n, 0n)] }],
    });
    expect(after.groups[0]!.results[0]!.remaining).toBe(3n);
  });
});

describe("bounds per workspace with two replicas", () => {
  it("leaves A's daily counters exact while B floods both replicas, B holding at most its bound on each", async () => {
    const DAY = 86_400_000n;
    const a = caller("ws_a", ...LIMITER);
    const b = caller("ws_b", ...LIMITER);
    const ring = new Rendezvous(replicas.map((r) => r.url));
    await replicas[0]!.client.limit({
      caller: a,
      check: { namespace: "api", identifier: "setup", limit: 10n, duration: DAY },
    });
    const nsA = (await replicas[0]!.deps.store.namespaceByName("ws_a", "api"))!;
    // One identifier of A owned by each replica, 7 of 10 used, asked through the other replica.
    const mine = replicas.map((r) => {
      for (let i = 0; ; i++)
        if (ring.owner(counterKey("ws_a", nsA.id, `user_${i}`)) === r.url) return `user_${i}`;
    });
    const check = (identifier: string, cost = 1n) => ({
      namespace: "api",
      identifier,
      limit: 10n,
      duration: DAY,
      cost,
    });
    for (const [i, identifier] of mine.entries()) {
      for (let n = 0; n < 7; n++)
        await replicas[1 - i]!.client.limit({ caller: a, check: check(identifier) });
    }

    // B: 300 new identifiers and 300 new named limits, half through each replica.
    const answers = await Promise.all(
      [0, 1].map((r) =>
        replicas[r]!.client.limitBatch({
          callers: [b],
          items: Array.from({ length: 150 }, (_, i) => ({
            callerIndex: 0,
            request: { check: { namespace: "api", identifier: `flood_${r}_${i}`, limit: 5n, duration: DAY } },
          })),
        }),
      ),
    );
    const named = await Promise.all(
      [0, 1].map((r) =>
        replicas[r]!.client.checkNamedLimits({
          groups: Array.from({ length: 150 }, (_, i) => ({
            workspaceId: "ws_b",
            limits: [{ owner: `key_${r}_${i}`, name: "requests", limit: 5n, duration: DAY }],
          })),
        }),
      ),
    );
    // Each replica admits B's new counters up to its bound of 100 and denies the rest.
    const nsB = (await replicas[0]!.deps.store.namespaceByName("ws_b", "api"))!;
    const owned = replicas.map(() => 0);
    for (const r of [0, 1]) {
      for (let i = 0; i < 150; i++) {
        owned[
          replicas.findIndex((x) => x.url === ring.owner(counterKey("ws_b", nsB.id, `flood_${r}_${i}`)))
        ]!++;
        owned[
          replicas.findIndex(
            (x) => x.url === ring.owner(namedCounterKey("ws_b", `key_${r}_${i}`, "requests")),
          )
        ]!++;
      }
    }
    const passed =
      answers
        .flatMap((x) => x.results)
        .filter((x) => x.result.case === "response" && x.result.value.result?.success).length +
      named.flatMap((x) => x.groups).filter((g) => g.passed).length;
    expect(owned.every((o) => o > 100)).toBe(true);
    expect(passed).toBe(200);

    for (const [i, identifier] of mine.entries()) {
      const left = await replicas[i]!.client.limit({ caller: a, check: check(identifier, 0n) });
      expect(left.result?.remaining, identifier).toBe(3n);
    }
  });
});

describe("a replica whose peer is down", () => {
  it("counts the peer's checks itself rather than failing them", async () => {
    const self = replicas[0]!.url;
    const dead = `http://127.0.0.1:${await freePort()}`;
    const windows = new SlidingWindows(clock);
    const limiter = new PeerLimiter(
      { self, peers: [self, dead], transport: (peer) => internalTransport(peer, { auth }) },
      windows,
      createLogger("ratelimit", "silent"),
    );
    const ring = new Rendezvous([self, dead]);
    let key = "";
    for (let i = 0; ring.owner(key) !== dead; i++) key = `ws_1\u001frlns_x\u001fu${i}`;
    const check = { key, limit: 1, duration: 60_000, cost: 1 };
    expect((await limiter.apply([[check]]))[0]![0]!.success).toBe(true);
    expect((await limiter.apply([[check]]))[0]![0]!.success).toBe(false);
  });
});
