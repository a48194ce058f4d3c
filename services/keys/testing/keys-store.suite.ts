import { randomUUID } from "node:crypto";
import { type AuditRecord, auditSuccess } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import type { CreditsState, KeysStore, NewKey } from "../src/store/keys-store.ts";

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

/** Creation time of the contract's keys: 2023-11-14T22:13:20Z. */
const CREATED = 1_700_000_000_000;
/** A moment after creation with no refill due for keys without a schedule. */
const NOW = CREATED + 1_000;
const DAY = 86_400_000;

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
    createdAt: CREATED,
    ratelimits: [],
    byteLength: 16,
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
        // Latchkey's additions, at their defaults when not given.
        keyFormat: "plain",
        leakPolicy: "revoke",
        ipAllowList: [],
        expiringNoticeDays: 7,
        creditThresholds: null,
      });
      expect(await store.findApi("api_unknown")).toBeUndefined();
    });

    it("lists a workspace's live APIs by id, in pages, restricted to the ids given", async () => {
      const s = await setup();
      const [ws, other] = s.workspaces;
      const ids = [unique("api"), unique("api"), unique("api"), unique("api")].sort();
      for (const id of ids) await s.store.createApi({ id, workspaceId: ws, name: id, createdAt: 1_000 });
      const theirs = unique("api");
      await s.store.createApi({ id: theirs, workspaceId: other, name: "theirs", createdAt: 1_000 });
      await s.deleteApi(ids[3]!);
      const wanted = [...ids, theirs];
      const first = await s.store.listApis(ws, { limit: 2, after: "", ids: wanted });
      expect(first.apis.map((a) => a.id)).toEqual(ids.slice(0, 2));
      expect(first.next).toBe(ids[1]);
      const second = await s.store.listApis(ws, { limit: 2, after: first.next!, ids: wanted });
      expect(second.apis).toEqual([
        { id: ids[2], workspaceId: ws, name: ids[2], createdAt: 1_000, deletedAt: null },
      ]);
      expect(second.next).toBeNull();
      expect((await s.store.listApis(ws, { limit: 100, after: "", ids: [] })).apis).toEqual([]);
      const all = await s.store.listApis(ws, { limit: 100, after: "" });
      expect(all.apis.map((a) => a.id)).toEqual(expect.arrayContaining(ids.slice(0, 3)));
      expect(all.apis.map((a) => a.id)).not.toContain(theirs);
      expect(all.apis.map((a) => a.id)).not.toContain(ids[3]);
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
        lastUsedAt: null,
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
      expect(await store.findKeyByHash(workspaces[0], key.hash)).toEqual(byId);
    });

    it("finds the keys of many hashes at once, skipping unknown ones", async () => {
      const { store, apiId, workspaces } = await withApi();
      const keys = [
        newKey(workspaces[0], apiId, {
          name: "rich",
          metaJson: '{"plan":"pro"}',
          permissions: ["documents.read"],
          roles: ["editor"],
          expires: 5_000_000_000_000,
          remaining: 7,
          ratelimits: [{ id: unique("rl"), name: "calls", limit: 10, duration: 1_000, autoApply: true }],
        }),
        newKey(workspaces[0], apiId),
        newKey(workspaces[0], apiId),
      ];
      for (const key of keys) await store.createKey(key);
      await store.deleteKey(keys[2]!.id, false, 42);
      const ws = workspaces[0];
      const found = await store.findKeysByHash(
        [keys[2]!.hash, "no such hash", keys[0]!.hash, keys[0]!.hash].map((hash) => ({
          workspaceId: ws,
          hash,
        })),
      );
      const byHash = new Map(found.map((k) => [k.hash, k]));
      expect(found).toHaveLength(2);
      // What verification reads, as findKeyByHash answers it (a store may answer more).
      const full = (await store.findKeyByHash(ws, keys[0]!.hash))!;
      expect(byHash.get(keys[0]!.hash)).toMatchObject({
        id: full.id,
        workspaceId: full.workspaceId,
        apiId: full.apiId,
        hash: full.hash,
        name: full.name,
        metaJson: full.metaJson,
        externalId: full.externalId,
        identityId: full.identityId,
        permissions: full.permissions,
        roles: full.roles,
        expires: full.expires,
        enabled: full.enabled,
        remaining: full.remaining,
        deletedAt: full.deletedAt,
        ratelimits: full.ratelimits,
        apiDeleted: full.apiDeleted,
      });
      // A deleted key is answered as findKeyByHash answers it: verification tells it is gone.
      expect(byHash.get(keys[2]!.hash)?.deletedAt).toBe(42);
      expect(await store.findKeysByHash([])).toEqual([]);
    });

    it("answers undefined for an unknown hash or id", async () => {
      const { store, workspaces } = await setup();
      expect(await store.findKeyByHash(workspaces[0], "no such hash")).toBeUndefined();
      expect(await store.findKeyById("key_unknown")).toBeUndefined();
    });

    it("refuses a second key with the same hash in one workspace", async () => {
      const { store, apiId, workspaces } = await withApi();
      const first = newKey(workspaces[0], apiId);
      await store.createKey(first);
      await expect(store.createKey(newKey(workspaces[0], apiId, { hash: first.hash }))).rejects.toThrow();
    });

    it("keeps a hash unique per workspace: another workspace's key with it is a key of its own", async () => {
      const { store, apiId, workspaces } = await withApi();
      const [a, b] = workspaces;
      const otherApi = unique("api");
      await store.createApi({ id: otherApi, workspaceId: b, name: "other", createdAt: 1_000 });
      const mine = newKey(a, apiId, { name: "a" });
      await store.createKey(mine);
      const theirs = newKey(b, otherApi, { hash: mine.hash, name: "b" });
      expect(await store.importKeys([theirs])).toEqual([true]);
      await expect(store.createKey(newKey(b, otherApi, { hash: mine.hash }))).rejects.toThrow();
      expect(await store.importKeys([newKey(b, otherApi, { hash: mine.hash })])).toEqual([false]);
      expect((await store.findKeyByHash(a, mine.hash))?.id).toBe(mine.id);
      expect((await store.findKeyByHash(b, mine.hash))?.id).toBe(theirs.id);
      const both = await store.findKeysByHash([
        { workspaceId: b, hash: mine.hash },
        { workspaceId: a, hash: mine.hash },
        { workspaceId: a, hash: "no such hash" },
      ]);
      expect(both.map((k) => [k.workspaceId, k.id]).sort()).toEqual(
        [
          [a, mine.id],
          [b, theirs.id],
        ].sort(),
      );
      // Only the workspace asked: a lookup in a workspace holding no key with the hash finds none.
      expect(await store.findKeysByHash([{ workspaceId: b, hash: unique("hash") }])).toEqual([]);
      await store.deleteKey(theirs.id, true, 43);
      expect(await store.findKeyByHash(b, mine.hash)).toBeUndefined();
      expect((await store.findKeyByHash(a, mine.hash))?.id).toBe(mine.id);
    });

    it("tells that a key's API is deleted", async () => {
      const s = await withApi();
      const key = newKey(s.workspaces[0], s.apiId);
      await s.store.createKey(key);
      await s.deleteApi(s.apiId);
      expect((await s.store.findKeyByHash(s.workspaces[0], key.hash))?.apiDeleted).toBe(true);
    });

    it("spends credits only while the balance covers the cost", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, { remaining: 5 });
      await store.createKey(key);
      expect(await store.spendCredits(key.id, 3, NOW)).toEqual({ spent: true, remaining: 2 });
      expect(await store.spendCredits(key.id, 3, NOW)).toEqual({ spent: false, remaining: 2 });
      expect(await store.spendCredits(key.id, 0, NOW)).toEqual({ spent: true, remaining: 2 });
      expect(await store.spendCredits(key.id, 2, NOW)).toEqual({ spent: true, remaining: 0 });
      expect(await store.spendCredits(key.id, 0, NOW)).toEqual({ spent: true, remaining: 0 });
      expect((await store.findKeyById(key.id))?.remaining).toBe(0);
    });

    it("spends nothing of an unlimited key and answers undefined for a missing one", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId);
      await store.createKey(key);
      expect(await store.spendCredits(key.id, 1, NOW)).toEqual({ spent: true, remaining: null });
      expect(await store.spendCredits("key_unknown", 1, NOW)).toBeUndefined();
    });

    it("never overdraws under concurrent spending", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, { remaining: 10 });
      await store.createKey(key);
      const results = await Promise.all(Array.from({ length: 25 }, () => store.spendCredits(key.id, 1, NOW)));
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

    it("marks an API deleted once", async () => {
      const { store, apiId } = await withApi();
      expect(await store.deleteApi(apiId, 5)).toBe(true);
      expect(await store.deleteApi(apiId, 6)).toBe(false);
      expect((await store.findApi(apiId))?.deletedAt).toBe(5);
      expect(await store.deleteApi("api_unknown", 5)).toBe(false);
    });

    it("lists live keys of one API by id, page by page, optionally of one externalId", async () => {
      const { store, apiId, workspaces } = await withApi();
      const ids = ["key_a1", "key_b2", "key_c3", "key_d4", "key_e5"].map((id) => `${id}_${unique("x")}`);
      for (const [i, id] of [...ids].reverse().entries()) {
        await store.createKey(
          newKey(workspaces[0], apiId, { id, externalId: i % 2 === 0 ? "user_1" : null }),
        );
      }
      await store.deleteKey(ids[2]!, false, 9);
      const first = await store.listKeys(apiId, { limit: 2, after: "" });
      expect(first.keys.map((k) => k.id)).toEqual([ids[0], ids[1]]);
      expect(first.next).toBe(ids[1]);
      const second = await store.listKeys(apiId, { limit: 2, after: first.next! });
      expect(second.keys.map((k) => k.id)).toEqual([ids[3], ids[4]]);
      expect(second.next).toBeNull();
      const own = await store.listKeys(apiId, { limit: 10, after: "", externalId: "user_1" });
      expect(own.keys.map((k) => k.id)).toEqual([ids[0], ids[4]]);
    });

    it("patches only the given fields and replaces the rate limits with the given set", async () => {
      const { store, apiId, workspaces } = await withApi();
      const keep = { id: unique("rl"), name: "keep", limit: 1, duration: 1_000, autoApply: false };
      const key = newKey(workspaces[0], apiId, {
        name: "old",
        metaJson: '{"a":1}',
        remaining: 10,
        ratelimits: [keep, { id: unique("rl"), name: "drop", limit: 2, duration: 2_000, autoApply: true }],
      });
      await store.createKey(key);
      const added = { id: unique("rl"), name: "new", limit: 3, duration: 3_000, autoApply: true };
      const updated = await store.updateKey(key.id, {
        name: null,
        enabled: false,
        permissions: ["x"],
        ratelimits: [{ ...keep, limit: 5 }, added],
        updatedAt: 77,
      });
      expect(updated).toMatchObject({
        name: null,
        enabled: false,
        permissions: ["x"],
        remaining: 10,
        updatedAt: 77,
      });
      expect(JSON.parse(updated!.metaJson!)).toEqual({ a: 1 });
      expect([...updated!.ratelimits].sort((a, b) => a.name.localeCompare(b.name))).toEqual([
        { ...keep, limit: 5 },
        added,
      ]);
      expect(await store.updateKey("key_unknown", { updatedAt: 1 })).toBeUndefined();
    });

    it("adds and removes permission slugs and role names in order, without duplicates", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, { permissions: ["b", "a"], roles: ["admin"] });
      await store.createKey(key);
      const added = await store.changeKeyList(
        key.id,
        "permissions",
        { add: ["c", "a", "d", "c"], remove: [] },
        5,
      );
      expect(added).toMatchObject({ permissions: ["b", "a", "c", "d"], roles: ["admin"], updatedAt: 5 });
      const removed = await store.changeKeyList(key.id, "permissions", { add: [], remove: ["a", "zz"] }, 6);
      expect(removed).toMatchObject({ permissions: ["b", "c", "d"], updatedAt: 6 });
      const roles = await store.changeKeyList(
        key.id,
        "roles",
        { add: ["reader", "admin"], remove: ["admin"] },
        7,
      );
      expect(roles).toMatchObject({ permissions: ["b", "c", "d"], roles: ["reader"] });
      expect((await store.findKeyById(key.id))?.roles).toEqual(["reader"]);
      expect(
        await store.changeKeyList("key_unknown", "roles", { add: ["x"], remove: [] }, 8),
      ).toBeUndefined();
    });

    it("loses none of many concurrent additions to one key", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId);
      await store.createKey(key);
      const slugs = Array.from({ length: 20 }, (_, i) => `p.${String(i).padStart(2, "0")}`);
      await Promise.all(
        slugs.map((slug) => store.changeKeyList(key.id, "permissions", { add: [slug], remove: [] }, 9)),
      );
      expect([...(await store.findKeyById(key.id))!.permissions].sort()).toEqual(slugs);
    });

    it("takes a deleted role or permission off every key of its workspace, once per deletion", async () => {
      const { store, apiId, workspaces } = await withApi();
      const role = unique("role");
      const slug = unique("perm");
      const otherApi = unique("api");
      await store.createApi({ id: otherApi, workspaceId: workspaces[1], name: "other", createdAt: 1 });
      const a = newKey(workspaces[0], apiId, { roles: ["x", role, "y"], permissions: [slug, "p"] });
      const b = newKey(workspaces[0], apiId, { roles: [role] });
      const without = newKey(workspaces[0], apiId, { roles: ["x"], permissions: ["p"] });
      const elsewhere = newKey(workspaces[1], otherApi, { roles: [role], permissions: [slug] });
      for (const k of [a, b, without, elsewhere]) await store.createKey(k);

      const deletion = {
        id: unique("role_id"),
        workspaceId: workspaces[0],
        list: "roles",
        name: role,
      } as const;
      expect((await store.removeDeletedGrant(deletion, 10))?.sort()).toEqual([a.hash, b.hash].sort());
      expect(await store.findKeyById(a.id)).toMatchObject({ roles: ["x", "y"], permissions: [slug, "p"] });
      expect(await store.findKeyById(b.id)).toMatchObject({ roles: [], updatedAt: null });
      expect(await store.findKeyById(without.id)).toMatchObject({ roles: ["x"], permissions: ["p"] });
      expect(await store.findKeyById(elsewhere.id)).toMatchObject({ roles: [role], permissions: [slug] });

      // The same deletion seen again (another instance) changes nothing, not even a name given back since.
      await store.changeKeyList(b.id, "roles", { add: [role], remove: [] }, 11);
      expect(await store.removeDeletedGrant(deletion, 12)).toBeUndefined();
      expect((await store.findKeyById(b.id))?.roles).toEqual([role]);

      const permission = {
        id: unique("perm_id"),
        workspaceId: workspaces[0],
        list: "permissions",
        name: slug,
      } as const;
      expect(await store.removeDeletedGrant(permission, 13)).toEqual([a.hash]);
      expect(await store.findKeyById(a.id)).toMatchObject({ roles: ["x", "y"], permissions: ["p"] });
      expect((await store.findKeyById(elsewhere.id))?.permissions).toEqual([slug]);
    });

    it("applies a deletion once when many ask at the same time", async () => {
      const { store, apiId, workspaces } = await withApi();
      const role = unique("role");
      const key = newKey(workspaces[0], apiId, { roles: [role] });
      await store.createKey(key);
      const deletion = {
        id: unique("role_id"),
        workspaceId: workspaces[0],
        list: "roles",
        name: role,
      } as const;
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => store.removeDeletedGrant(deletion, 10)),
      );
      expect(answers.filter((a) => a !== undefined)).toEqual([[key.hash]]);
      expect((await store.findKeyById(key.id))?.roles).toEqual([]);
    });

    it("moves lastUsedAt forward only, for many keys at once, skipping unknown keys", async () => {
      const { store, apiId, workspaces } = await withApi();
      const a = newKey(workspaces[0], apiId);
      const b = newKey(workspaces[0], apiId);
      await store.createKey(a);
      await store.createKey(b);
      await store.recordLastUsed([
        { keyId: a.id, at: 2_000 },
        { keyId: b.id, at: 5_000 },
        { keyId: "key_unknown", at: 1 },
      ]);
      await store.recordLastUsed([
        { keyId: b.id, at: 3_000 },
        { keyId: a.id, at: 4_000 },
      ]);
      expect(await store.findKeyById(a.id)).toMatchObject({ lastUsedAt: 4_000, updatedAt: null });
      expect((await store.findKeyById(b.id))?.lastUsedAt).toBe(5_000);
      await store.recordLastUsed([]);
      const page = await store.listKeys(apiId, { limit: 10, after: "" });
      expect(page.keys.map((k) => k.lastUsedAt).sort()).toEqual([4_000, 5_000]);
    });

    it("keeps the latest use when writers overlap in any order, alongside credit spends", async () => {
      const { store, apiId, workspaces } = await withApi();
      const created = Array.from({ length: 20 }, () => newKey(workspaces[0], apiId, { remaining: 1_000 }));
      for (const k of created) await store.createKey(k);
      const ids = created.map((k) => k.id);
      const writes = Array.from({ length: 8 }, (_, w) => {
        const order = w % 2 === 0 ? ids : [...ids].reverse();
        return store.recordLastUsed(order.map((keyId, i) => ({ keyId, at: 1_000 * w + i })));
      });
      const spends = store.spendCreditsGroups(
        ids.map((keyId) => ({ keyId, cost: 1, count: 3 })),
        NOW,
      );
      await Promise.all([...writes, spends]);
      for (const [i, k] of created.entries()) {
        const stored = await store.findKeyById(k.id);
        // Writer 7 went in reverse order: key i got 7000 + (19 - i); writer 6, in order, 6000 + i.
        expect(stored).toMatchObject({ lastUsedAt: 7_000 + (19 - i), remaining: 997 });
      }
    });

    it("sets, increments and decrements credits, clamping at 0", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, {
        remaining: 5,
        refill: { interval: "daily", amount: 9, day: null },
      });
      await store.createKey(key);
      const refill = { interval: "daily", amount: 9, day: null };
      expect(await store.updateCredits(key.id, "increment", 3, NOW)).toEqual({ remaining: 8, refill });
      expect(await store.updateCredits(key.id, "decrement", 20, NOW)).toEqual({ remaining: 0, refill });
      expect(await store.updateCredits(key.id, "set", 4, NOW)).toEqual({ remaining: 4, refill });
      expect(await store.updateCredits(key.id, "set", null, NOW)).toEqual({ remaining: null, refill: null });
      expect(await store.updateCredits(key.id, "increment", 1, NOW)).toBe("unlimited");
      expect(await store.updateCredits(key.id, "decrement", 1, NOW)).toBe("unlimited");
      expect(await store.updateCredits(key.id, "set", 2, NOW)).toEqual({ remaining: 2, refill: null });
      expect(await store.updateCredits("key_unknown", "set", 1, NOW)).toBeUndefined();
    });

    it("keeps a deleted key's record, and forgets a permanently deleted one with its hash", async () => {
      const { store, apiId, workspaces } = await withApi();
      const soft = newKey(workspaces[0], apiId, { remaining: 3 });
      await store.createKey(soft);
      await store.deleteKey(soft.id, false, 42);
      expect((await store.findKeyByHash(workspaces[0], soft.hash))?.deletedAt).toBe(42);
      expect(await store.spendCredits(soft.id, 1, NOW)).toBeUndefined();
      const hard = newKey(workspaces[0], apiId, {
        ratelimits: [{ id: unique("rl"), name: "r", limit: 1, duration: 1_000, autoApply: false }],
      });
      await store.createKey(hard, {
        keyId: hard.id,
        workspaceId: workspaces[0],
        ciphertext: "c",
        iv: "i",
        tag: "t",
        kekId: "kek_1",
      });
      await store.deleteKey(hard.id, true, 43);
      expect(await store.findKeyById(hard.id)).toBeUndefined();
      expect(await store.findEncryptedKey(hard.id)).toBeUndefined();
      await store.createKey(newKey(workspaces[0], apiId, { hash: hard.hash }));
      expect(await store.findKeyByHash(workspaces[0], hard.hash)).toBeDefined();
    });

    it("keeps a recoverable key's sealed plaintext apart and says the key is recoverable", async () => {
      const { store, apiId, workspaces } = await withApi();
      const plain = newKey(workspaces[0], apiId);
      await store.createKey(plain);
      expect(await store.holdsRecoverableKeys(apiId)).toBe(false);
      const sealed = newKey(workspaces[0], apiId);
      const secret = {
        keyId: sealed.id,
        workspaceId: workspaces[0],
        ciphertext: "Y2lw",
        iv: "aXY=",
        tag: "dGFn",
        kekId: "kek_1",
      };
      await store.createKey(sealed, secret);
      expect((await store.findKeyById(plain.id))?.recoverable).toBe(false);
      expect((await store.findKeyById(sealed.id))?.recoverable).toBe(true);
      expect(await store.findEncryptedKey(sealed.id)).toEqual(secret);
      expect(await store.findEncryptedKey(plain.id)).toBeUndefined();
      // The API holds a recoverable key while one is not deleted; another API holds none.
      expect(await store.holdsRecoverableKeys(apiId)).toBe(true);
      expect(await store.holdsRecoverableKeys(unique("api"))).toBe(false);
      await store.deleteKey(sealed.id, false, NOW);
      expect(await store.holdsRecoverableKeys(apiId)).toBe(false);
    });

    it("imports keys whose hash is new and skips the others", async () => {
      const { store, apiId, workspaces } = await withApi();
      const existing = newKey(workspaces[0], apiId);
      await store.createKey(existing);
      const fresh = newKey(workspaces[0], apiId, { remaining: 4 });
      expect(await store.importKeys([fresh, newKey(workspaces[0], apiId, { hash: existing.hash })])).toEqual([
        true,
        false,
      ]);
      expect((await store.findKeyByHash(workspaces[0], fresh.hash))?.remaining).toBe(4);
    });

    it("rerolls: the new key takes the balance and refill state, the original gets its expiry", async () => {
      const { store, apiId, workspaces } = await withApi();
      const original = newKey(workspaces[0], apiId, {
        remaining: 10,
        refill: { interval: "daily", amount: 10, day: null },
      });
      await store.createKey(original);
      await store.spendCredits(original.id, 3, CREATED + 60_000);
      const next = newKey(workspaces[0], apiId, {
        remaining: 999,
        refill: original.refill,
        createdAt: CREATED + DAY,
      });
      await store.rerollKey(next, undefined, original.id, CREATED + DAY + 60_000);
      expect(await store.findKeyById(next.id)).toMatchObject({
        remaining: 7,
        lastRefillAt: null,
        expires: null,
      });
      expect((await store.findKeyById(original.id))?.expires).toBe(CREATED + DAY + 60_000);
    });

    it("grants each group of equal spends min(count, floor(balance / cost)), in one call", async () => {
      const { store, apiId, workspaces } = await withApi();
      const ten = newKey(workspaces[0], apiId, { remaining: 10 });
      const three = newKey(workspaces[0], apiId, { remaining: 3 });
      const open = newKey(workspaces[0], apiId);
      const gone = newKey(workspaces[0], apiId, { remaining: 5 });
      for (const k of [ten, three, open, gone]) await store.createKey(k);
      await store.deleteKey(gone.id, false, 1);
      const results = await store.spendCreditsGroups(
        [
          { keyId: ten.id, cost: 3, count: 5 },
          { keyId: three.id, cost: 1, count: 2 },
          { keyId: open.id, cost: 7, count: 4 },
          { keyId: gone.id, cost: 1, count: 1 },
          { keyId: "key_unknown", cost: 1, count: 1 },
        ],
        NOW,
      );
      // baseline and period: the balance each key was given at its creation, and when.
      expect(results).toEqual([
        { granted: 3, before: 10, baseline: 10, period: CREATED },
        { granted: 2, before: 3, baseline: 3, period: CREATED },
        { granted: 4, before: null, baseline: null, period: CREATED },
        undefined,
        undefined,
      ]);
      expect((await store.findKeyById(ten.id))?.remaining).toBe(1);
      expect((await store.findKeyById(three.id))?.remaining).toBe(1);
      expect(await store.spendCreditsGroups([{ keyId: ten.id, cost: 0, count: 3 }], NOW)).toEqual([
        { granted: 3, before: 1, baseline: 10, period: CREATED },
      ]);
    });

    it("applies a due daily refill in the spend itself, replacing the balance, once per day", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, {
        remaining: 2,
        refill: { interval: "daily", amount: 5, day: null },
      });
      await store.createKey(key);
      // Created at 22:13 UTC: nothing is due the same day.
      expect(await store.spendCredits(key.id, 1, CREATED + 60_000)).toEqual({ spent: true, remaining: 1 });
      const midnight = Math.ceil(CREATED / DAY) * DAY;
      expect(await store.spendCredits(key.id, 1, midnight - 1)).toEqual({ spent: true, remaining: 0 });
      expect(await store.spendCredits(key.id, 1, midnight)).toEqual({ spent: true, remaining: 4 });
      expect(await store.spendCredits(key.id, 1, midnight + DAY - 1)).toEqual({ spent: true, remaining: 3 });
      expect((await store.findKeyById(key.id))?.lastRefillAt).toBe(midnight);
      // Down for three days: one refill when it comes back, not three.
      expect(await store.spendCredits(key.id, 5, midnight + 4 * DAY + 7)).toEqual({
        spent: true,
        remaining: 0,
      });
      expect((await store.findKeyById(key.id))?.lastRefillAt).toBe(midnight + 4 * DAY);
    });

    it("applies a due refill even when the spend is refused, and answers the refilled balance", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, {
        remaining: 0,
        refill: { interval: "daily", amount: 2, day: null },
      });
      await store.createKey(key);
      const midnight = Math.ceil(CREATED / DAY) * DAY;
      expect(await store.spendCredits(key.id, 3, midnight + 5)).toEqual({ spent: false, remaining: 2 });
      expect((await store.findKeyById(key.id))?.remaining).toBe(2);
    });

    it("refills every due key once per period, monthly on the last day of a shorter month", async () => {
      const { store, apiId, workspaces } = await withApi();
      const jan31 = Date.UTC(2024, 0, 31, 12);
      const monthly = newKey(workspaces[0], apiId, {
        remaining: 1,
        refill: { interval: "monthly", amount: 50, day: 31 },
        createdAt: jan31,
      });
      const daily = newKey(workspaces[0], apiId, {
        remaining: 1,
        refill: { interval: "daily", amount: 7, day: null },
        createdAt: jan31,
      });
      const gone = newKey(workspaces[0], apiId, {
        remaining: 1,
        refill: { interval: "daily", amount: 7, day: null },
        createdAt: jan31,
      });
      for (const k of [monthly, daily, gone]) await store.createKey(k);
      await store.deleteKey(gone.id, false, jan31);
      // Other keys of the store's world may be due too: count only these three.
      await store.applyDueRefills(Date.UTC(2024, 1, 28, 23, 59));
      expect((await store.findKeyById(monthly.id))?.remaining).toBe(1);
      expect((await store.findKeyById(daily.id))?.remaining).toBe(7);
      await store.spendCredits(daily.id, 7, Date.UTC(2024, 1, 28, 23, 59));
      await store.applyDueRefills(Date.UTC(2024, 1, 29));
      expect(await store.findKeyById(monthly.id)).toMatchObject({
        remaining: 50,
        lastRefillAt: Date.UTC(2024, 1, 29),
      });
      expect((await store.findKeyById(daily.id))?.remaining).toBe(7);
      expect((await store.findKeyById(gone.id))?.remaining).toBe(1);
      await store.spendCredits(monthly.id, 10, Date.UTC(2024, 1, 29, 1));
      await store.applyDueRefills(Date.UTC(2024, 1, 29, 2));
      expect((await store.findKeyById(monthly.id))?.remaining).toBe(40);
      await store.applyDueRefills(Date.UTC(2024, 2, 31));
      expect(await store.findKeyById(monthly.id)).toMatchObject({
        remaining: 50,
        lastRefillAt: Date.UTC(2024, 2, 31),
      });
    });

    it("applies at most `limit` due refills a call, the rest at the calls after", async () => {
      const { store, apiId, workspaces } = await withApi();
      const keys = Array.from({ length: 5 }, () =>
        newKey(workspaces[0], apiId, { remaining: 0, refill: { interval: "daily", amount: 3, day: null } }),
      );
      for (const k of keys) await store.createKey(k);
      const at = Math.ceil(CREATED / DAY) * DAY + 1;
      // Other keys of the store's world may be due too: every call refills 2 at most, until fewer are due.
      let calls = 0;
      for (let n = 2; n === 2; calls++) {
        n = await store.applyDueRefills(at, 2);
        expect(n).toBeLessThanOrEqual(2);
      }
      expect(calls).toBeGreaterThanOrEqual(3);
      for (const k of keys) expect((await store.findKeyById(k.id))?.remaining).toBe(3);
      expect(await store.applyDueRefills(at, 2)).toBe(0);
    });

    it("settles a due refill before a credits update, so the update is not overwritten", async () => {
      const { store, apiId, workspaces } = await withApi();
      const key = newKey(workspaces[0], apiId, {
        remaining: 1,
        refill: { interval: "daily", amount: 10, day: null },
      });
      await store.createKey(key);
      const midnight = Math.ceil(CREATED / DAY) * DAY;
      expect((await store.updateCredits(key.id, "increment", 5, midnight + 1)) as CreditsState).toMatchObject(
        {
          remaining: 15,
        },
      );
      expect(await store.applyDueRefills(midnight + 2)).toBeGreaterThanOrEqual(0);
      expect((await store.findKeyById(key.id))?.remaining).toBe(15);
    });

    it("writes a mutation's audit record only when it makes the change, readable by its workspace only", async () => {
      const { store, apiId, workspaces } = await withApi();
      const [ws, other] = workspaces;
      const audit = (operation: string, id: string): AuditRecord =>
        auditSuccess("cli", ws, operation, [{ type: "key", id }], ["name"], NOW);
      const key = newKey(ws, apiId);
      await store.createKey(key, undefined, audit("keys.createKey", key.id));
      const unlimited = newKey(ws, apiId);
      await store.createKey(unlimited);
      // Made: recorded. Not made (gone, unlimited, already deleted): not recorded.
      expect(
        await store.updateKey(key.id, { name: "n", updatedAt: NOW }, audit("keys.updateKey", key.id)),
      ).toBeDefined();
      expect(
        await store.updateKey("key_gone", { name: "n", updatedAt: NOW }, audit("keys.updateKey", "key_gone")),
      ).toBeUndefined();
      expect(
        await store.updateCredits(
          unlimited.id,
          "increment",
          1,
          NOW,
          audit("keys.updateCredits", unlimited.id),
        ),
      ).toBe("unlimited");
      expect(
        await store.updateCredits("key_gone", "set", 1, NOW, audit("keys.updateCredits", "key_gone")),
      ).toBeUndefined();
      expect(
        await store.changeKeyList(
          "key_gone",
          "roles",
          { add: ["r"], remove: [] },
          NOW,
          audit("keys.addRoles", "key_gone"),
        ),
      ).toBeUndefined();
      expect(await store.deleteApi(apiId, NOW, audit("apis.deleteApi", apiId))).toBe(true);
      expect(await store.deleteApi(apiId, NOW, audit("apis.deleteApi", apiId))).toBe(false);
      const listed = await store.listAudit(ws, { limit: 100, resourceId: key.id });
      expect(listed.map((r) => r.operation)).toEqual(
        expect.arrayContaining(["keys.createKey", "keys.updateKey"]),
      );
      expect(listed).toHaveLength(2);
      expect(await store.listAudit(ws, { limit: 100, resourceId: "key_gone" })).toEqual([]);
      expect(await store.listAudit(ws, { limit: 100, resourceId: unlimited.id })).toEqual([]);
      expect(await store.listAudit(ws, { limit: 100, resourceId: apiId })).toHaveLength(1);
      expect(await store.listAudit(other, { limit: 100, resourceId: key.id })).toEqual([]);
    });

    it("records a key's deletion only for the call that deleted it: concurrent deletions record one, a missing key none", async () => {
      const { store, apiId, workspaces } = await withApi();
      const [ws] = workspaces;
      const audit = (id: string): AuditRecord =>
        auditSuccess("cli", ws, "keys.deleteKey", [{ type: "key", id }], [], NOW);
      const soft = newKey(ws, apiId);
      const hard = newKey(ws, apiId);
      await store.createKey(soft);
      await store.createKey(hard);
      for (const [key, permanent] of [
        [soft, false],
        [hard, true],
      ] as const) {
        const answers = await Promise.all(
          Array.from({ length: 5 }, () => store.deleteKey(key.id, permanent, NOW, audit(key.id))),
        );
        expect(answers.filter((deleted) => deleted)).toHaveLength(1);
        expect(answers.filter((deleted) => !deleted)).toHaveLength(4);
        expect(await store.listAudit(ws, { limit: 100, resourceId: key.id })).toHaveLength(1);
      }
      expect(await store.deleteKey("key_gone", false, NOW, audit("key_gone"))).toBe(false);
      expect(await store.deleteKey("key_gone", true, NOW, audit("key_gone"))).toBe(false);
      expect(await store.listAudit(ws, { limit: 100, resourceId: "key_gone" })).toEqual([]);
    });

    it("records an import only when it inserted a key", async () => {
      const { store, apiId, workspaces } = await withApi();
      const [ws] = workspaces;
      const existing = newKey(ws, apiId);
      await store.createKey(existing);
      const audit = (inserted: NewKey[]): AuditRecord =>
        auditSuccess(
          "cli",
          ws,
          "keys.migrateKeys",
          [{ type: "api", id: apiId }],
          [`${inserted.length}`],
          NOW,
        );
      const again = newKey(ws, apiId, { hash: existing.hash });
      expect(await store.importKeys([again], audit)).toEqual([false]);
      expect(await store.importKeys([], audit)).toEqual([]);
      expect(await store.listAudit(ws, { limit: 100, operation: "keys.migrateKeys" })).toEqual([]);
      const fresh = newKey(ws, apiId);
      expect(await store.importKeys([fresh, again], audit)).toEqual([true, false]);
      expect(
        (await store.listAudit(ws, { limit: 100, operation: "keys.migrateKeys" })).map((r) => r.fields),
      ).toEqual([["1"]]);
    });
  });
}
