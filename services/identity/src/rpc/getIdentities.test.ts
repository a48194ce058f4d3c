import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, otherRoot, root } from "../../testing/in-memory-identity.ts";

const VERIFIER = root("api.*.verify_key");

describe("getIdentities", () => {
  describe("200", () => {
    it("answers the identities found with meta and limits, leaving out missing ids", async () => {
      const { client, seed } = harness();
      const a = await seed.identity("a", {
        metaJson: '{"x":1}',
        ratelimits: [{ name: "r", limit: 3n, duration: 1000n, autoApply: true }],
      });
      const b = await seed.identity("b");
      const res = await client.getIdentities({ caller: VERIFIER, identityIds: [a, "id_missing", b, a] });
      const byId = new Map(res.identities.map((i) => [i.id, i]));
      expect([...byId.keys()].sort()).toEqual([a, b].sort());
      expect(res.identities).toHaveLength(2);
      expect(byId.get(a)).toMatchObject({ externalId: "a", metaJson: '{"x":1}' });
      expect(byId.get(a)?.ratelimits.map((r) => [r.name, r.limit, r.autoApply])).toEqual([["r", 3n, true]]);
    });

    it("answers nothing for another workspace's identities", async () => {
      const { client, seed } = harness();
      const a = await seed.identity("a");
      expect((await client.getIdentities({ caller: otherRoot(), identityIds: [a] })).identities).toEqual([]);
    });

    it("answers nothing for no ids", async () => {
      const { client } = harness();
      expect((await client.getIdentities({ caller: VERIFIER, identityIds: [] })).identities).toEqual([]);
    });
  });

  describe("400", () => {
    it("refuses an empty id and more than 1000 ids", async () => {
      const { client } = harness();
      await expectReason(
        client.getIdentities({ caller: VERIFIER, identityIds: ["a", ""] }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/identityIds/1",
        },
      );
      await expectReason(
        client.getIdentities({
          caller: VERIFIER,
          identityIds: Array.from({ length: 1001 }, (_, i) => `id_${i}`),
        }),
        ErrorReason.INVALID_INPUT,
        { location: "/identityIds" },
      );
    });
  });
});
