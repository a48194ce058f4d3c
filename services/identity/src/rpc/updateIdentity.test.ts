import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const UPDATE = "identity.*.update_identity";
const rl = (name: string, limit = 10n, autoApply = false) => ({ name, limit, duration: 60_000n, autoApply });

describe("updateIdentity", () => {
  describe("200", () => {
    it("replaces the rate limits: a name that stays keeps its id and takes the new values", async () => {
      const { client, seed, clock, events } = harness();
      const id = await seed.identity("u", { ratelimits: [rl("keep"), rl("drop")] });
      const before = (await client.getIdentity({ caller: root("*"), identity: id })).identity!;
      const keepId = before.ratelimits.find((r) => r.name === "keep")?.id;
      clock.advance(5_000);
      const { identity } = await client.updateIdentity({
        caller: root(UPDATE),
        identity: "u",
        ratelimits: { ratelimits: [rl("keep", 99n, true), rl("new")] },
      });
      expect(identity?.ratelimits.map((r) => [r.name, r.limit, r.autoApply])).toEqual([
        ["keep", 99n, true],
        ["new", 10n, false],
      ]);
      expect(identity?.ratelimits.find((r) => r.name === "keep")?.id).toBe(keepId);
      expect(identity?.updatedAt).toBe(before.updatedAt + 5_000n);
      expect(identity?.createdAt).toBe(before.createdAt);
      expect(events.at(-1)).toMatchObject({ identityId: id, externalId: "u" });
    });

    it("clears the rate limits with an empty set and keeps the meta", async () => {
      const { client, seed } = harness();
      await seed.identity("u", { metaJson: '{"a":1}', ratelimits: [rl("x")] });
      const { identity } = await client.updateIdentity({
        caller: root(UPDATE),
        identity: "u",
        ratelimits: {},
      });
      expect(identity?.ratelimits).toEqual([]);
      expect(identity?.metaJson).toBe('{"a":1}');
    });

    it("keeps the rate limits when they are left out and replaces the meta", async () => {
      const { client, seed } = harness();
      await seed.identity("u", { metaJson: '{"a":1}', ratelimits: [rl("x")] });
      const { identity } = await client.updateIdentity({
        caller: root(UPDATE),
        identity: "u",
        metaJson: '{"b":2}',
      });
      expect(identity?.metaJson).toBe('{"b":2}');
      expect(identity?.ratelimits.map((r) => r.name)).toEqual(["x"]);
      const emptied = await client.updateIdentity({ caller: root(UPDATE), identity: "u", metaJson: "{}" });
      expect(emptied.identity?.metaJson).toBe("{}");
    });
  });

  describe("400", () => {
    it("refuses meta that is not a JSON object and duplicate rate limit names, changing nothing", async () => {
      const { client, seed } = harness();
      await seed.identity("u", { metaJson: '{"a":1}', ratelimits: [rl("x")] });
      await expectReason(
        client.updateIdentity({ caller: root(UPDATE), identity: "u", metaJson: "[]" }),
        ErrorReason.INVALID_INPUT,
        { location: "/meta" },
      );
      await expectReason(
        client.updateIdentity({
          caller: root(UPDATE),
          identity: "u",
          ratelimits: { ratelimits: [rl("a"), rl("a")] },
        }),
        ErrorReason.INVALID_INPUT,
        { location: "/ratelimits/1/name" },
      );
      const { identity } = await client.getIdentity({ caller: root("*"), identity: "u" });
      expect(identity?.metaJson).toBe('{"a":1}');
      expect(identity?.ratelimits.map((r) => r.name)).toEqual(["x"]);
    });

    it("refuses an empty identity", async () => {
      const { client } = harness();
      await expectReason(
        client.updateIdentity({ caller: root(UPDATE), identity: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/identity",
        },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without identity.*.update_identity, naming it, and changes nothing", async () => {
      const { client, seed } = harness();
      await seed.identity("u", { metaJson: '{"a":1}' });
      await expectReason(
        client.updateIdentity({ caller: root("identity.*.read_identity"), identity: "u", metaJson: "{}" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(UPDATE) },
      );
      expect((await client.getIdentity({ caller: root("*"), identity: "u" })).identity?.metaJson).toBe(
        '{"a":1}',
      );
    });
  });

  describe("404", () => {
    it("answers IDENTITY_NOT_FOUND for a missing identity and for another workspace's", async () => {
      const { client, seed } = harness();
      await seed.identity("u");
      await expectReason(
        client.updateIdentity({ caller: root(UPDATE), identity: "nobody", metaJson: "{}" }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
      await expectReason(
        client.updateIdentity({ caller: otherRoot(UPDATE), identity: "u", metaJson: "{}" }),
        ErrorReason.IDENTITY_NOT_FOUND,
      );
    });
  });
});
