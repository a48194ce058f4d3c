import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import {
  expectReason,
  harness,
  lacks,
  OTHER_WS,
  otherRoot,
  root,
  WS,
} from "../../testing/in-memory-identity.ts";

const CREATE = "identity.*.create_identity";

describe("createIdentity", () => {
  describe("200", () => {
    it("creates an identity with meta and rate limits and announces it", async () => {
      const { client, events } = harness();
      const { identityId } = await client.createIdentity({
        caller: root(CREATE),
        externalId: "user_123",
        metaJson: JSON.stringify({ plan: "pro" }),
        ratelimits: [{ name: "requests", limit: 100n, duration: 60_000n, autoApply: true }],
      });
      expect(identityId).toMatch(/^id_[1-9A-HJ-NP-Za-km-z]{16}$/);
      const { identity } = await client.getIdentity({ caller: root("*"), identity: identityId });
      expect(identity?.externalId).toBe("user_123");
      expect(JSON.parse(identity?.metaJson ?? "null")).toEqual({ plan: "pro" });
      expect(identity?.ratelimits).toHaveLength(1);
      expect(identity?.ratelimits[0]).toMatchObject({
        name: "requests",
        limit: 100n,
        duration: 60_000n,
        autoApply: true,
      });
      expect(identity?.ratelimits[0]?.id).toMatch(/^rl_/);
      expect(events.map((e) => [e.workspaceId, e.identityId, e.externalId])).toEqual([
        [WS, identityId, "user_123"],
      ]);
    });

    it("creates an identity without meta or limits", async () => {
      const { client } = harness();
      const { identityId } = await client.createIdentity({ caller: root(CREATE), externalId: "a.b-c_d" });
      const { identity } = await client.getIdentity({ caller: root("*"), identity: "a.b-c_d" });
      expect(identity?.id).toBe(identityId);
      expect(identity?.metaJson).toBeUndefined();
      expect(identity?.ratelimits).toEqual([]);
    });

    it("lets another workspace use the same externalId", async () => {
      const { client, seed } = harness();
      await seed.identity("user_1");
      const { identityId } = await client.createIdentity({ caller: otherRoot(CREATE), externalId: "user_1" });
      expect(identityId).toMatch(/^id_/);
      expect(OTHER_WS).not.toBe(WS);
    });
  });

  describe("400", () => {
    it("refuses an empty externalId", async () => {
      const { client } = harness();
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/externalId",
          message: "externalId must not be empty",
        },
      );
    });

    it("refuses an externalId with a character outside letters, digits, _ . -", async () => {
      const { client } = harness();
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "user 1" }),
        ErrorReason.INVALID_INPUT,
        { location: "/externalId" },
      );
    });

    it("refuses an externalId longer than 255 characters", async () => {
      const { client } = harness();
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "a".repeat(256) }),
        ErrorReason.INVALID_INPUT,
        { location: "/externalId", message: "externalId must be 1 to 255 characters long, got 256" },
      );
    });

    it("refuses meta that is not a JSON object", async () => {
      const { client } = harness();
      for (const metaJson of ["[1]", "3", "null", "{nope"]) {
        await expectReason(
          client.createIdentity({ caller: root(CREATE), externalId: "u", metaJson }),
          ErrorReason.INVALID_INPUT,
          { location: "/meta", message: "meta must be a JSON object" },
        );
      }
    });

    it("refuses a rate limit name used twice, a limit below 1 and a duration below 1000 ms", async () => {
      const { client } = harness();
      const ok = { name: "a", limit: 1n, duration: 1000n, autoApply: false };
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "u", ratelimits: [ok, ok] }),
        ErrorReason.INVALID_INPUT,
        { location: "/ratelimits/1/name" },
      );
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "u", ratelimits: [{ ...ok, limit: 0n }] }),
        ErrorReason.INVALID_INPUT,
        { location: "/ratelimits/0/limit" },
      );
      await expectReason(
        client.createIdentity({
          caller: root(CREATE),
          externalId: "u",
          ratelimits: [{ ...ok, duration: 999n }],
        }),
        ErrorReason.INVALID_INPUT,
        { location: "/ratelimits/0/duration" },
      );
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "u", ratelimits: [{ ...ok, name: "" }] }),
        ErrorReason.INVALID_INPUT,
        { location: "/ratelimits/0/name" },
      );
    });

    it("refuses more than 50 rate limits", async () => {
      const { client } = harness();
      const ratelimits = Array.from({ length: 51 }, (_, i) => ({
        name: `l${i}`,
        limit: 1n,
        duration: 1000n,
        autoApply: false,
      }));
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "u", ratelimits }),
        ErrorReason.INVALID_INPUT,
        { location: "/ratelimits" },
      );
    });
  });

  describe("401", () => {
    it("refuses a request without a caller", async () => {
      const { client } = harness();
      await expectReason(client.createIdentity({ externalId: "u" }), ErrorReason.UNAUTHENTICATED);
    });
  });

  describe("403", () => {
    it("refuses a root key without identity.*.create_identity, naming it, and creates nothing", async () => {
      const { client, deps, events } = harness();
      await expectReason(
        client.createIdentity({ caller: root("identity.*.read_identity"), externalId: "u" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(CREATE) },
      );
      expect(await deps.store.findIdentity(WS, "u")).toBeUndefined();
      expect(events).toEqual([]);
    });
  });

  describe("409", () => {
    it("refuses a second identity with the same externalId and keeps the first unchanged", async () => {
      const { client, seed, events } = harness();
      const first = await seed.identity("user_1", { metaJson: '{"v":1}' });
      await expectReason(
        client.createIdentity({ caller: root(CREATE), externalId: "user_1", metaJson: '{"v":2}' }),
        ErrorReason.IDENTITY_ALREADY_EXISTS,
        { message: "An identity with externalId 'user_1' already exists in this workspace." },
      );
      const { identity } = await client.getIdentity({ caller: root("*"), identity: "user_1" });
      expect(identity?.id).toBe(first);
      expect(identity?.metaJson).toBe('{"v":1}');
      expect(events).toHaveLength(1);
    });
  });
});
