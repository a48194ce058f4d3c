import { describe, expect, it } from "vitest";
import type { PolicyRecord, PolicyStore } from "../src/store/forward-auth-policy-store.ts";

/** What every PolicyStore does, run on the in-memory and the PostgreSQL store. */
export function policyStoreContract(
  name: string,
  make: () => Promise<{ store: PolicyStore; workspaces: [string, string] }>,
): void {
  describe(`the ${name} forward-auth policy store`, () => {
    let n = 0;
    const policy = (workspaceId: string, policyName: string, isDefault = false) => ({
      id: `fap_${name}${++n}`,
      workspaceId,
      name: policyName,
      isDefault,
      definitionJson: JSON.stringify({ name: policyName, apiId: "api_1" }),
      createdAt: 1000 + n,
    });
    const order = (rows: PolicyRecord[]) => rows.map((p) => [p.name, p.position]);

    it("inserts at a position, keeps positions dense, puts the default last and refuses a taken name", async () => {
      const { store, workspaces } = await make();
      const [ws, other] = workspaces;
      expect((await store.create(policy(ws, "b"), undefined, 10)) as PolicyRecord).toMatchObject({
        position: 0,
      });
      await store.create(policy(ws, "dflt", true), 0, 10);
      await store.create(policy(ws, "a"), 0, 10);
      await store.create(policy(ws, "c"), 99, 10);
      expect(order(await store.list(ws, undefined, 10))).toEqual([
        ["a", 0],
        ["b", 1],
        ["c", 2],
        ["dflt", null],
      ]);
      expect(await store.create(policy(ws, "a"), undefined, 10)).toBe("name taken");
      expect(await store.create(policy(ws, "dflt2", true), undefined, 10)).toBe("default taken");
      // Another workspace has the same names and an order of its own.
      await store.create(policy(other, "a"), undefined, 10);
      expect(order(await store.list(other, undefined, 10))).toEqual([["a", 0]]);
      const [first] = await store.list(ws, undefined, 1);
      expect(JSON.parse(first!.definitionJson)).toEqual({ name: "a", apiId: "api_1" });
      expect(await store.find(ws, first!.id)).toEqual(first);
      expect(order(await store.list(ws, 0, 2))).toEqual([
        ["b", 1],
        ["c", 2],
      ]);
      expect(order(await store.list(ws, 2, 2))).toEqual([["dflt", null]]);
    });

    it("moves a policy up and down, renames it, and closes the gap a deleted one leaves", async () => {
      const { store, workspaces } = await make();
      const [ws, other] = workspaces;
      const ids: string[] = [];
      for (const p of ["p0", "p1", "p2", "p3"]) {
        ids.push(((await store.create(policy(ws, p), undefined, 10)) as PolicyRecord).id);
      }
      await store.update(ws, ids[3]!, { position: 0 }, 5000);
      expect(order(await store.list(ws, undefined, 10)).map(([p]) => p)).toEqual(["p3", "p0", "p1", "p2"]);
      await store.update(ws, ids[3]!, { position: 50 }, 5000);
      expect(order(await store.list(ws, undefined, 10)).map(([p]) => p)).toEqual(["p0", "p1", "p2", "p3"]);
      expect(await store.update(ws, ids[0]!, { name: "p1" }, 5000)).toBe("name taken");
      const renamed = (await store.update(
        ws,
        ids[0]!,
        { name: "first", definitionJson: '{"name":"first","apiId":"api_2"}' },
        6000,
      )) as PolicyRecord;
      expect([
        renamed.name,
        renamed.position,
        JSON.parse(renamed.definitionJson).apiId,
        renamed.updatedAt,
      ]).toEqual(["first", 0, "api_2", 6000]);
      // Another workspace's id is a missing one.
      expect(await store.update(other, ids[0]!, { position: 1 }, 7000)).toBeUndefined();
      expect(await store.find(other, ids[0]!)).toBeUndefined();
      expect(await store.delete(other, ids[1]!)).toBe(false);
      expect(await store.delete(ws, ids[1]!)).toBe(true);
      expect(await store.delete(ws, ids[1]!)).toBe(false);
      expect(order(await store.list(ws, undefined, 10))).toEqual([
        ["first", 0],
        ["p2", 1],
        ["p3", 2],
      ]);
    });

    it("holds a workspace at its most policies, even when many are created at once, and leaves another's alone", async () => {
      const { store, workspaces } = await make();
      const [ws, other] = workspaces;
      const made = await Promise.all(
        Array.from({ length: 12 }, (_, i) => store.create(policy(ws, `x${i}`), 0, 5)),
      );
      expect(made.filter((m) => m === "full").length).toBe(7);
      const rows = await store.list(ws, undefined, 100);
      expect(rows.map((p) => p.position).sort()).toEqual([0, 1, 2, 3, 4]);
      expect(((await store.create(policy(other, "y"), undefined, 5)) as PolicyRecord).position).toBe(0);
    });
  });
}
