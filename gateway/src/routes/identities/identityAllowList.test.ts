import type { CreateIdentityRequest, UpdateIdentityRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

// Latchkey's addition: an identity's IP allow-list on create, update and the answers that show it.
describe("identities' ipAllowList through the gateway", () => {
  let created: CreateIdentityRequest | undefined;
  let updated: UpdateIdentityRequest | undefined;
  const h = harness({
    identity: {
      createIdentity(req) {
        created = req;
        return { identityId: "id_1" };
      },
      updateIdentity(req) {
        updated = req;
        return {
          identity: {
            id: "id_1",
            externalId: "user_42",
            ipAllowList: req.ipAllowList?.entries ?? ["10.0.0.0/8"],
          },
        };
      },
      getIdentity() {
        return { identity: { id: "id_1", externalId: "user_42", ipAllowList: ["203.0.113.0/24"] } };
      },
    },
  });

  it("sends the list on create, and none when it is omitted", async () => {
    const res = await h.post("identities.createIdentity", {
      externalId: "user_42",
      ipAllowList: ["203.0.113.0/24", "2001:db8::/32"],
    });
    expect(res.status).toBe(200);
    expect(created?.ipAllowList).toEqual(["203.0.113.0/24", "2001:db8::/32"]);
    await h.post("identities.createIdentity", { externalId: "user_43" });
    expect(created?.ipAllowList).toEqual([]);
  });

  it("replaces the list on update, clears it with [], keeps it when omitted", async () => {
    const res = await h.post("identities.updateIdentity", {
      identity: "user_42",
      ipAllowList: ["10.1.0.0/16"],
    });
    expect(res.status).toBe(200);
    expect(updated?.ipAllowList?.entries).toEqual(["10.1.0.0/16"]);
    expect(res.body.data).toEqual({ id: "id_1", externalId: "user_42", ipAllowList: ["10.1.0.0/16"] });
    const cleared = await h.post("identities.updateIdentity", { identity: "user_42", ipAllowList: [] });
    expect(updated?.ipAllowList?.entries).toEqual([]);
    // An empty list is no list: the answer leaves it out, as it does a key's.
    expect(cleared.body.data).toEqual({ id: "id_1", externalId: "user_42" });
    await h.post("identities.updateIdentity", { identity: "user_42" });
    expect(updated?.ipAllowList).toBeUndefined();
  });

  it("answers the list with the identity", async () => {
    const res = await h.post("identities.getIdentity", { identity: "user_42" });
    expect(res.body.data.ipAllowList).toEqual(["203.0.113.0/24"]);
  });

  it.each([
    ["identities.createIdentity", { externalId: "u", ipAllowList: Array(101).fill("10.0.0.1") }],
    ["identities.updateIdentity", { identity: "u", ipAllowList: Array(101).fill("10.0.0.1") }],
  ])("refuses more than 100 entries on %s", async (operation, body) => {
    const res = await h.post(operation, body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toContainEqual(
      expect.objectContaining({
        location: "/body/ipAllowList",
        message: "ipAllowList must hold at most 100 items.",
      }),
    );
  });
});
