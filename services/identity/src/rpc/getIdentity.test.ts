import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const READ = "identity.*.read_identity";

describe("getIdentity", () => {
  describe("200", () => {
    it("answers the identity by id and by externalId", async () => {
      const { client, seed, clock } = harness();
      const id = await seed.identity("user_1", {
        metaJson: '{"a":1}',
        ratelimits: [
          { name: "tokens", limit: 5n, duration: 1000n, autoApply: false },
          { name: "requests", limit: 10n, duration: 60_000n, autoApply: true },
        ],
      });
      const byId = await client.getIdentity({ caller: root(READ), identity: id });
      const byExternalId = await client.getIdentity({ caller: root(READ), identity: "user_1" });
      expect(byExternalId).toEqual(byId);
      expect(byId.identity).toMatchObject({
        id,
        externalId: "user_1",
        metaJson: '{"a":1}',
        createdAt: BigInt(clock.now()),
        updatedAt: BigInt(clock.now()),
      });
      expect(byId.identity?.ratelimits.map((r) => [r.name, r.limit, r.duration, r.autoApply])).toEqual([
        ["requests", 10n, 60_000n, true],
        ["tokens", 5n, 1000n, false],
      ]);
    });

    it("answers a root key holding identity.<id>.read_identity for that identity, also by externalId", async () => {
      const { client, seed } = harness();
      const id = await seed.identity("user_1");
      const { identity } = await client.getIdentity({
        caller: root(`identity.${id}.read_identity`),
        identity: "user_1",
      });
      expect(identity?.id).toBe(id);
    });
  });

  describe("400", () => {
    it("refuses an empty identity", async () => {
      const { client } = harness();
      await expectReason(
        client.getIdentity({ caller: root(READ), identity: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/identity",
        },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without identity.*.read_identity, naming it", async () => {
      const { client, seed } = harness();
      await seed.identity("user_1");
      await expectReason(
        client.getIdentity({ caller: root("identity.*.create_identity"), identity: "user_1" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(READ) },
      );
    });

    it("gives a root key scoped to one identity the same refusal for another identity as for a missing one", async () => {
      const { client, seed } = harness();
      const mine = await seed.identity("mine");
      await seed.identity("theirs");
      const scoped = root(`identity.${mine}.read_identity`);
      await expectReason(
        client.getIdentity({ caller: scoped, identity: "theirs" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message: lacks(READ),
        },
      );
      await expectReason(
        client.getIdentity({ caller: scoped, identity: "nobody" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message: lacks(READ),
        },
      );
    });
  });

  describe("404", () => {
    it("answers IDENTITY_NOT_FOUND for an identity that does not exist", async () => {
      const { client } = harness();
      await expectReason(
        client.getIdentity({ caller: root(READ), identity: "nobody" }),
        ErrorReason.IDENTITY_NOT_FOUND,
        {
          message: "The identity 'nobody' was not found.",
        },
      );
    });

    it("answers IDENTITY_NOT_FOUND for another workspace's identity, by id and by externalId", async () => {
      const { client, seed } = harness();
      const id = await seed.identity("user_1");
      await expectReason(
        client.getIdentity({ caller: otherRoot(READ), identity: id }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
      await expectReason(
        client.getIdentity({ caller: otherRoot(READ), identity: "user_1" }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
    });
  });
});
