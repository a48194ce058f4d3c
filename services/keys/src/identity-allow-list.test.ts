import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../testing/in-memory-keys.ts";

// In memory: an identity's list, the API's changed with apis.updateApi, and how they combine with the key's.

const caller = callerOf("ws_1", "*");

describe("IP allow-lists of identities and of updated APIs, in memory", () => {
  it("checks the identity's list only for its keys, and follows its change at the next verification", async () => {
    const { client, seed, identity } = memoryKeys();
    const apiId = await seed.api();
    const { identityId } = await identity.createIdentity({
      caller,
      externalId: "user_1",
      ipAllowList: ["2001:db8::/32"],
    });
    const own = await seed.key({ apiId, externalId: "user_1" });
    const other = await seed.key({ apiId });
    const code = async (key: string, clientIp: string) =>
      (await client.verifyKey({ caller, key, clientIp })).code;
    expect(await code(own.key, "2001:db9::1")).toBe(VerifyCode.FORBIDDEN_IP);
    expect(await code(own.key, "2001:db8::1")).toBe(VerifyCode.VALID);
    // An IPv4 address is in no IPv6 range.
    expect(await code(own.key, "192.0.2.1")).toBe(VerifyCode.FORBIDDEN_IP);
    expect(await code(other.key, "192.0.2.1")).toBe(VerifyCode.VALID);
    // A refused verification still answers the identity, as DISABLED does.
    expect(
      (await client.verifyKey({ caller, key: own.key, clientIp: "192.0.2.1" })).identity?.externalId,
    ).toBe("user_1");

    await identity.updateIdentity({
      caller,
      identity: identityId,
      ipAllowList: { entries: ["192.0.2.0/24"] },
    });
    expect(await code(own.key, "192.0.2.1")).toBe(VerifyCode.VALID);
    expect(await code(own.key, "2001:db8::1")).toBe(VerifyCode.FORBIDDEN_IP);
    // An update leaving the list out keeps it.
    await identity.updateIdentity({ caller, identity: identityId, metaJson: '{"plan":"pro"}' });
    expect(await code(own.key, "2001:db8::1")).toBe(VerifyCode.FORBIDDEN_IP);
    expect((await identity.getIdentity({ caller, identity: identityId })).identity?.ipAllowList).toEqual([
      "192.0.2.0/24",
    ]);
  });

  it("takes an API's new list at the next verification of a key already cached", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { key } = await seed.key({ apiId });
    const code = async (clientIp: string) => (await client.verifyKey({ caller, key, clientIp })).code;
    expect(await code("198.51.100.1")).toBe(VerifyCode.VALID);
    await client.updateApi({ caller, apiId, ipAllowList: { values: ["203.0.113.0/24"] } });
    expect(await code("198.51.100.1")).toBe(VerifyCode.FORBIDDEN_IP);
    expect(await code("203.0.113.1")).toBe(VerifyCode.VALID);
    // Another setting changed leaves the list as it is.
    expect((await client.updateApi({ caller, apiId, leakPolicy: "flag" })).api?.ipAllowList).toEqual([
      "203.0.113.0/24",
    ]);
    expect(await code("198.51.100.1")).toBe(VerifyCode.FORBIDDEN_IP);
  });

  it("refuses an identity's list of more than 100 entries, and names a bad entry's place", async () => {
    const { identity } = memoryKeys();
    const many = Array.from({ length: 101 }, (_, i) => `10.0.0.${i}`);
    expect(
      (await rejection(identity.createIdentity({ caller, externalId: "u", ipAllowList: many }))).message,
    ).toBe("an IP allow-list holds at most 100 entries");
    const { identityId } = await identity.createIdentity({ caller, externalId: "u" });
    const bad = await rejection(
      identity.updateIdentity({
        caller,
        identity: identityId,
        ipAllowList: { entries: ["10.0.0.1", "10.0.0.0/40"] },
      }),
    );
    expect(bad.message).toBe("'10.0.0.0/40' is neither an IP address nor a CIDR");
  });
});
