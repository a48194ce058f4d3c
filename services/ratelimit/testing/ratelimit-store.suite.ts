import { randomUUID } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import type { RatelimitStore } from "../src/store/ratelimit-store.ts";

/** What every RatelimitStore must do; run on memory (unit) and PostgreSQL (integration). */
export function ratelimitStoreContract(
  name: string,
  makeStore: () => Promise<RatelimitStore> | RatelimitStore,
) {
  describe(`${name} ratelimit store`, () => {
    // Stores may be shared between tests (one database per file): each test works in its own workspaces.
    let wsA = "";
    let wsB = "";
    beforeEach(() => {
      wsA = `ws_${randomUUID()}`;
      wsB = `ws_${randomUUID()}`;
    });

    it("creates a namespace once and finds it by id and by name within its workspace only", async () => {
      const store = await makeStore();
      const ns = await store.createNamespace(wsA, "api.requests");
      expect(ns.id).toMatch(/^rlns_/);
      expect(await store.createNamespace(wsA, "api.requests")).toEqual(ns);
      expect(await store.namespaceById(wsA, ns.id)).toEqual(ns);
      expect(await store.namespaceByName(wsA, "api.requests")).toEqual(ns);
      expect(await store.namespaceById(wsB, ns.id)).toBeUndefined();
      expect(await store.namespaceByName(wsB, "api.requests")).toBeUndefined();
      const other = await store.createNamespace(wsB, "api.requests");
      expect(other.id).not.toBe(ns.id);
    });

    it("lists a workspace's namespaces by id, in pages, restricted to the ids given", async () => {
      const store = await makeStore();
      const made = [];
      for (const name of ["a", "b", "c"]) made.push(await store.createNamespace(wsA, name));
      const ids = made.map((n) => n.id).sort();
      const theirs = await store.createNamespace(wsB, "a");
      const first = await store.listNamespaces(wsA, { limit: 2 });
      expect(first.namespaces.map((n) => n.id)).toEqual(ids.slice(0, 2));
      expect(first.next).toBe(ids[1]);
      const second = await store.listNamespaces(wsA, { limit: 2, after: first.next! });
      expect(second.namespaces.map((n) => n.id)).toEqual(ids.slice(2));
      expect(second.next).toBeUndefined();
      const some = await store.listNamespaces(wsA, { limit: 10, ids: [ids[0]!, ids[2]!, theirs.id] });
      expect(some.namespaces.map((n) => n.id)).toEqual([ids[0], ids[2]]);
      expect((await store.listNamespaces(wsA, { limit: 10, ids: [] })).namespaces).toEqual([]);
    });

    it("answers one namespace to concurrent creations of the same name", async () => {
      const store = await makeStore();
      const all = await Promise.all(Array.from({ length: 10 }, () => store.createNamespace(wsA, "burst")));
      expect(new Set(all.map((n) => n.id)).size).toBe(1);
    });

    it("upserts an override by identifier keeping its id", async () => {
      const store = await makeStore();
      const ns = await store.createNamespace(wsA, "n");
      const first = await store.setOverride({
        namespaceId: ns.id,
        identifier: "user_*",
        limit: 5,
        duration: 1000,
      });
      expect(first.id).toMatch(/^rlor_/);
      const second = await store.setOverride({
        namespaceId: ns.id,
        identifier: "user_*",
        limit: 0,
        duration: 60_000,
      });
      expect(second).toEqual({ ...first, limit: 0, duration: 60_000 });
      expect(await store.getOverride(ns.id, "user_*")).toEqual(second);
      expect(await store.getOverride(ns.id, "user_1")).toBeUndefined();
      expect(await store.allOverrides(ns.id)).toEqual([second]);
    });

    it("deletes an override and reports whether there was one", async () => {
      const store = await makeStore();
      const ns = await store.createNamespace(wsA, "n");
      await store.setOverride({ namespaceId: ns.id, identifier: "a", limit: 1, duration: 1000 });
      expect(await store.deleteOverride(ns.id, "a")).toBe(true);
      expect(await store.deleteOverride(ns.id, "a")).toBe(false);
      expect(await store.getOverride(ns.id, "a")).toBeUndefined();
    });

    it("pages overrides by id with a cursor only while more remain", async () => {
      const store = await makeStore();
      const ns = await store.createNamespace(wsA, "n");
      const other = await store.createNamespace(wsA, "other");
      await store.setOverride({ namespaceId: other.id, identifier: "x", limit: 1, duration: 1000 });
      const made = [];
      for (let i = 0; i < 5; i++) {
        made.push(
          await store.setOverride({ namespaceId: ns.id, identifier: `id_${i}`, limit: i, duration: 1000 }),
        );
      }
      const ids = made.map((o) => o.id).sort((a, b) => (a < b ? -1 : 1));
      const first = await store.listOverrides(ns.id, { limit: 2 });
      expect(first.overrides.map((o) => o.id)).toEqual(ids.slice(0, 2));
      expect(first.next).toBe(ids[1]);
      const second = await store.listOverrides(ns.id, { limit: 2, after: first.next! });
      expect(second.overrides.map((o) => o.id)).toEqual(ids.slice(2, 4));
      const third = await store.listOverrides(ns.id, { limit: 2, after: second.next! });
      expect(third.overrides.map((o) => o.id)).toEqual(ids.slice(4));
      expect(third.next).toBeUndefined();
      const exact = await store.listOverrides(ns.id, { limit: 5 });
      expect(exact.overrides).toHaveLength(5);
      expect(exact.next).toBeUndefined();
    });

    it("answers ready", async () => {
      const store = await makeStore();
      expect(await store.ping()).toBe(true);
    });
  });
}
