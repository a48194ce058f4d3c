import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { KeysStore, NewKey } from "./keys-store.ts";

export interface ContractSetup {
  store: KeysStore;
  /** Two workspaces that exist in the store's world. */
  workspaces: [string, string];
  /** A root key stored with this hash. */
  addRootKey(r: {
    id: string;
    workspaceId: string;
    hash: string;
    permissions: string[];
    revokedAt: number | null;
  }): Promise<void>;
  /** Marks an API deleted (no RPC does this yet). */
  deleteApi(id: string): Promise<void>;
}

const unique = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 16)}`;

function newKey(workspaceId: string, apiId: string, fields: Partial<NewKey> = {}): NewKey {
  return {
    id: unique("key"),
    workspaceId,
    apiId,
    hash: unique("hash"),
    start: "sk_abcd",
    name: null,
    metaJson: null,
    externalId: null,
    identityId: null,
    permissions: [],
    roles: [],
    expires: null,
    enabled: true,
    remaining: null,
    refill: null,
    createdAt: 1_700_000_000_000,
    ratelimits: [],
    ...fields,
  };
}

/** The behaviour every KeysStore must have; run against memory (unit) and PostgreSQL (integration). */
export function keysStoreContract(name: string, setup: () => Promise<ContractSetup>) {
  describe(`${name} keys store`, () => {
    async function withApi() {
      const s = await setup();
      const apiId = unique("api");
      await s.store.createApi({
        id: apiId,
        workspaceId: s.workspaces[0],
        name: "payments",
        createdAt: 1_000,
      });
      return { ...s, apiId };
    }

    it("returns an API as created, and undefined for an unknown id", async () => {
      const { store, apiId, workspaces } = await withApi();
      expect(await store.findApi(apiId)).toEqual({
        id: apiId,
        workspaceId: workspaces[0],
        name: "payments",
        createdAt: 1_000,
        deletedAt: null,
      });
      expect(await store.findApi("api_unknown")).toBeUndefined();
    });

    it("returns a key with every field and its rate limits, by id and by hash", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, {
        name: "customer",
        metaJson: '{"plan": "pro"}',
        externalId: "user_1",
        permissions: ["a", "b"],
        roles: [],
        expires: 4_102_444_800_000,
        enabled: false,
        remaining: 42,
        refill: { interval: "monthly", amount: 100, day: 31 },
        ratelimits: [
          { id: unique("rl"), name: "b-tokens", limit: 100, duration: 60_000, autoApply: false },
          { id: unique("rl"), name: "a-requests", limit: 10, duration: 1_000, autoApply: true },
        ],
      });
      await store.createKey(key);
      const { ratelimits, ...rest } = key;
      const expected = {
        ...rest,
        metaJson: expect.any(String),
        lastRefillAt: null,
        updatedAt: null,
        deletedAt: null,
        apiDeleted: false,
      };
      const byId = await store.findKeyById(key.id);
      expect(byId).toMatchObject(expected);
      expect(JSON.parse(byId!.metaJson!)).toEqual({ plan: "pro" });
      expect([...byId!.ratelimits].sort((x, y) => x.name.localeCompare(y.name))).toEqual([
        ratelimits[1],
        ratelimits[0],
      ]);
      expect(await store.findKeyByHash(key.hash)).toEqual(byId);
    });

    it("answers undefined for an unknown hash or id", async () => {
      const { store } = await setup();
      expect(await store.findKeyByHash("no such hash")).toBeUndefined();
      expect(await store.findKeyById("key_unknown")).toBeUndefined();
    });

    it("refuses a second key with the same hash", async () => {
      const { store, apiId, workspaces } = await withApi();
      const first = newKey(workspaces[0], apiId);
      await store.createKey(first);
      await expect(store.createKey(newKey(workspaces[0], apiId, { hash: first.hash }))).rejects.toThrow();
    });

    it("tells that a key's API is deleted", async () => {
      const s = await withApi();
      const key = newKey(s.workspaces[0], s.apiId);
      await s.store.createKey(key);
      await s.deleteApi(s.apiId);
      expect((await s.store.findKeyByHash(key.hash))?.apiDeleted).toBe(true);
    });

    it("spends credits only while the balance covers the cost", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, { remaining: 5 });
      await store.createKey(key);
      expect(await store.spendCredits(key.id, 3)).toEqual({ spent: true, remaining: 2 });
      expect(await store.spendCredits(key.id, 3)).toEqual({ spent: false, remaining: 2 });
      expect(await store.spendCredits(key.id, 0)).toEqual({ spent: true, remaining: 2 });
      expect(await store.spendCredits(key.id, 2)).toEqual({ spent: true, remaining: 0 });
      expect(await store.spendCredits(key.id, 0)).toEqual({ spent: true, remaining: 0 });
      expect((await store.findKeyById(key.id))?.remaining).toBe(0);
    });

    it("spends nothing of an unlimited key and answers undefined for a missing one", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId);
      await store.createKey(key);
      expect(await store.spendCredits(key.id, 1)).toEqual({ spent: true, remaining: null });
      expect(await store.spendCredits("key_unknown", 1)).toBeUndefined();
    });

    it("never overdraws under concurrent spending", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, { remaining: 10 });
      await store.createKey(key);
      const results = await Promise.all(Array.from({ length: 25 }, () => store.spendCredits(key.id, 1)));
      expect(results.filter((r) => r?.spent)).toHaveLength(10);
      expect((await store.findKeyById(key.id))?.remaining).toBe(0);
    });

    it("finds a root key by hash, revoked or not", async () => {
      const s = await setup();
      const active = {
        id: unique("rk"),
        workspaceId: s.workspaces[1],
        hash: unique("h"),
        permissions: ["api.*.verify_key"],
        revokedAt: null,
      };
      const revoked = {
        id: unique("rk"),
        workspaceId: s.workspaces[0],
        hash: unique("h"),
        permissions: ["*"],
        revokedAt: 5,
      };
      await s.addRootKey(active);
      await s.addRootKey(revoked);
      expect(await s.store.findRootKeyByHash(active.hash)).toEqual({
        id: active.id,
        workspaceId: s.workspaces[1],
        permissions: ["api.*.verify_key"],
        revokedAt: null,
      });
      expect((await s.store.findRootKeyByHash(revoked.hash))?.revokedAt).toBe(5);
      expect(await s.store.findRootKeyByHash("unknown")).toBeUndefined();
    });
  });
}
