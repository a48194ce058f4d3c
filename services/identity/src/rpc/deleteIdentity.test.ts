import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const DELETE = "identity.*.delete_identity";

describe("deleteIdentity", () => {
  describe("200", () => {
    it("deletes the identity for good, by externalId, announces it, and frees the externalId", async () => {
      const { client, seed, events } = harness();
      const id = await seed.identity("u");
      expect(await client.deleteIdentity({ caller: root(DELETE), identity: "u" })).toMatchObject({});
      expect(events.at(-1)).toMatchObject({ identityId: id, externalId: "u", deleted: true });
      await expectReason(
        client.getIdentity({ caller: root("*"), identity: id }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
      const again = await seed.identity("u");
      expect(again).not.toBe(id);
    });

    it("deletes by id", async () => {
      const { client, seed } = harness();
      const id = await seed.identity("u");
      await client.deleteIdentity({ caller: root(DELETE), identity: id });
      await expectReason(
        client.getIdentity({ caller: root("*"), identity: "u" }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
    });
  });

  describe("400", () => {
    it("refuses an empty identity", async () => {
      const { client } = harness();
      await expectReason(
        client.deleteIdentity({ caller: root(DELETE), identity: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/identity",
        },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without identity.*.delete_identity, naming it, and keeps the identity", async () => {
      const { client, seed } = harness();
      await seed.identity("u");
      await expectReason(
        client.deleteIdentity({ caller: root("identity.*.update_identity"), identity: "u" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(DELETE) },
      );
      expect((await client.getIdentity({ caller: root("*"), identity: "u" })).identity?.externalId).toBe("u");
    });
  });

  describe("404", () => {
    it("answers IDENTITY_NOT_FOUND for a missing identity, a deleted one and another workspace's", async () => {
      const { client, seed } = harness();
      await seed.identity("u");
      await expectReason(
        client.deleteIdentity({ caller: root(DELETE), identity: "nobody" }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
      await expectReason(
        client.deleteIdentity({ caller: otherRoot(DELETE), identity: "u" }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
      await client.deleteIdentity({ caller: root(DELETE), identity: "u" });
      await expectReason(
        client.deleteIdentity({ caller: root(DELETE), identity: "u" }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
    });
  });
});
