import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

let stack: Stack;
beforeAll(async () => {
  // Over NATS, as deployed: the identity process announces a change and the keys process drops its cache.
  stack = await startStack({ natsUrl: process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222" });
});
afterAll(async () => {
  await stack?.stop();
});

describe("an identity's IP allow-list through the gateway (separate processes)", () => {
  it("refuses a key of the identity from outside its list, allows it from inside, and follows a change", async () => {
    const created = await stack.call("identities.createIdentity", {
      externalId: "user_allow_listed",
      ipAllowList: ["203.0.113.0/24", "2001:db8::/32"],
    });
    expect(created.status).toBe(200);
    const read = await stack.call("identities.getIdentity", { identity: "user_allow_listed" });
    expect(read.body.data.ipAllowList).toEqual(["203.0.113.0/24", "2001:db8::/32"]);
    const api = await stack.call("apis.createApi", { name: "identity-allow-list" });
    const made = await stack.call("keys.createKey", {
      apiId: api.body.data.apiId,
      externalId: "user_allow_listed",
    });
    const key: string = made.body.data.key;
    const verify = async (ipAddress: string) => {
      const res = await stack.call("keys.verifyKey", { key, ipAddress });
      expect(res.status).toBe(200);
      return res.body.data.code as string;
    };
    expect(await verify("198.51.100.7")).toBe("FORBIDDEN_IP");
    expect(await verify("203.0.113.7")).toBe("VALID");
    expect(await verify("2001:db8::1")).toBe("VALID");

    const updated = await stack.call("identities.updateIdentity", {
      identity: "user_allow_listed",
      ipAllowList: ["198.51.100.0/24"],
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data.ipAllowList).toEqual(["198.51.100.0/24"]);
    // The change reaches the keys process over NATS; the next verification after it follows the new list.
    await expect.poll(() => verify("198.51.100.7"), { timeout: 5_000 }).toBe("VALID");
    expect(await verify("203.0.113.7")).toBe("FORBIDDEN_IP");
  });

  it("answers 400 naming the entry that is no CIDR", async () => {
    const res = await stack.call("identities.createIdentity", {
      externalId: "user_bad_list",
      ipAllowList: ["10.0.0.0/8", "10.0.0.0/33"],
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error)).toContain("'10.0.0.0/33' is neither an IP address nor a CIDR");
  });
});
