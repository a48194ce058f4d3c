import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, OTHER_WS, otherRoot, root, WS } from "../../testing/in-memory-identity.ts";

// What the keys service passes: a root key allowed to create keys, nothing about identities.
const KEYS_CALLER = root("api.*.create_key");

describe("ensureIdentity", () => {
  describe("200", () => {
    it("creates a missing identity without meta or limits, answers created, and announces it", async () => {
      const { client, events } = harness();
      const res = await client.ensureIdentity({ caller: KEYS_CALLER, externalId: "user_1" });
      expect(res.created).toBe(true);
      expect(res.identity).toMatchObject({ externalId: "user_1", ratelimits: [] });
      expect(res.identity?.metaJson).toBeUndefined();
      expect(res.identity?.id).toMatch(/^id_/);
      expect(events.map((e) => [e.workspaceId, e.identityId])).toEqual([[WS, res.identity?.id]]);
    });

    it("answers the existing identity with its meta and limits, unchanged and unannounced", async () => {
      const { client, seed, events } = harness();
      const id = await seed.identity("user_1", {
        metaJson: '{"a":1}',
        ratelimits: [{ name: "r", limit: 1n, duration: 1000n, autoApply: true }],
      });
      const before = events.length;
      const res = await client.ensureIdentity({ caller: KEYS_CALLER, externalId: "user_1" });
      expect(res.created).toBe(false);
      expect(res.identity).toMatchObject({ id, metaJson: '{"a":1}' });
      expect(res.identity?.ratelimits.map((r) => r.name)).toEqual(["r"]);
      expect(events.length).toBe(before);
    });

    it("answers one identity to concurrent calls for the same externalId", async () => {
      const { client } = harness();
      const all = await Promise.all(
        Array.from({ length: 5 }, () => client.ensureIdentity({ caller: KEYS_CALLER, externalId: "burst" })),
      );
      expect(new Set(all.map((r) => r.identity?.id)).size).toBe(1);
      expect(all.filter((r) => r.created)).toHaveLength(1);
    });

    it("keeps workspaces apart", async () => {
      const { client, seed } = harness();
      const mine = await seed.identity("user_1");
      const theirs = await client.ensureIdentity({ caller: otherRoot(), externalId: "user_1" });
      expect(theirs.created).toBe(true);
      expect(theirs.identity?.id).not.toBe(mine);
      expect(OTHER_WS).not.toBe(WS);
    });
  });

  describe("400", () => {
    it("refuses an invalid externalId", async () => {
      const { client } = harness();
      await expectReason(
        client.ensureIdentity({ caller: KEYS_CALLER, externalId: "no spaces" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/externalId",
        },
      );
    });
  });

  describe("401", () => {
    it("refuses a request without a caller", async () => {
      const { client } = harness();
      await expectReason(client.ensureIdentity({ externalId: "u" }), ErrorReason.UNAUTHENTICATED);
    });
  });
});
