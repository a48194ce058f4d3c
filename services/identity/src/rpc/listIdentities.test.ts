import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const READ = "identity.*.read_identity";

describe("listIdentities", () => {
  describe("200", () => {
    it("pages through every identity once, in a stable order, and says when no more follow", async () => {
      const { client, seed } = harness();
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push(await seed.identity(`user_${i}`));
      const seen: string[] = [];
      let cursor = "";
      const pages: boolean[] = [];
      do {
        const res = await client.listIdentities({ caller: root(READ), page: { limit: 2, cursor } });
        seen.push(...res.identities.map((i) => i.id));
        pages.push(res.page?.hasMore ?? false);
        cursor = res.page?.cursor ?? "";
      } while (cursor);
      expect(pages).toEqual([true, true, false]);
      expect(seen).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
    });

    it("answers at most 100 when no limit is given", async () => {
      const { client, seed } = harness();
      for (let i = 0; i < 101; i++) await seed.identity(`u${i}`);
      const res = await client.listIdentities({ caller: root(READ) });
      expect(res.identities).toHaveLength(100);
      expect(res.page?.hasMore).toBe(true);
      expect(res.page?.cursor).toBe(res.identities[99]?.id);
    });

    it("searches a case-insensitive substring of the externalId or the id", async () => {
      const { client, seed } = harness();
      const alice = await seed.identity("Alice");
      await seed.identity("bob");
      const byName = await client.listIdentities({ caller: root(READ), search: "aLI" });
      expect(byName.identities.map((i) => i.externalId)).toEqual(["Alice"]);
      const byId = await client.listIdentities({ caller: root(READ), search: alice.toUpperCase() });
      expect(byId.identities.map((i) => i.id)).toEqual([alice]);
      const none = await client.listIdentities({ caller: root(READ), search: "zzz" });
      expect(none.identities).toEqual([]);
      expect(none.page).toMatchObject({ hasMore: false, cursor: "" });
    });

    it("lists only the caller's workspace", async () => {
      const { client, seed } = harness();
      await seed.identity("user_1");
      const res = await client.listIdentities({ caller: otherRoot(READ) });
      expect(res.identities).toEqual([]);
    });
  });

  describe("400", () => {
    it("refuses a limit above 100 or below 0", async () => {
      const { client } = harness();
      await expectReason(
        client.listIdentities({ caller: root(READ), page: { limit: 101 } }),
        ErrorReason.INVALID_INPUT,
        { location: "/limit", message: "limit must be between 1 and 100, got 101" },
      );
      await expectReason(
        client.listIdentities({ caller: root(READ), page: { limit: -1 } }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/limit",
        },
      );
    });

    it("refuses a search longer than 256 characters", async () => {
      const { client } = harness();
      await expectReason(
        client.listIdentities({ caller: root(READ), search: "a".repeat(257) }),
        ErrorReason.INVALID_INPUT,
        { location: "/search" },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without identity.*.read_identity, even one scoped to a single identity", async () => {
      const { client, seed } = harness();
      const id = await seed.identity("u");
      await expectReason(
        client.listIdentities({ caller: root(`identity.${id}.read_identity`) }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(READ) },
      );
    });
  });
});
