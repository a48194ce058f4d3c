import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { callerOf } from "../testing/in-memory-keys.ts";
import { keysInstancesOverNats } from "../testing/keys-instances.ts";

// An identity's IP allow-list, stored by the identity service in PostgreSQL and cached by the keys
// service for verification, follows a change made through another instance over real NATS.

const caller = callerOf("ws_default", "*");
const { instance } = keysInstancesOverNats("keys-identity-allow-list-test");

describe("an identity's IP allow-list", () => {
  it("refuses an outside address, allows an inside one, and follows the identity's change", async () => {
    const a = await instance();
    const b = await instance();
    const { identityId } = await b.deps.identity.createIdentity({
      caller,
      externalId: "user_office",
      ipAllowList: ["203.0.113.0/24"],
    });
    const { apiId } = await a.client.createApi({ caller, name: "allow-listed" });
    const { key } = await a.client.createKey({ caller, apiId, externalId: "user_office" });
    const from = async (clientIp: string) => (await a.client.verifyKey({ caller, key, clientIp })).code;

    expect(await from("198.51.100.7")).toBe(VerifyCode.FORBIDDEN_IP);
    expect(await from("203.0.113.7")).toBe(VerifyCode.VALID);
    // Without an address (Unkey's SDKs send none) the lists are not checked.
    expect((await a.client.verifyKey({ caller, key })).code).toBe(VerifyCode.VALID);

    await b.deps.identity.updateIdentity({
      caller,
      identity: identityId,
      ipAllowList: { entries: ["198.51.100.0/24"] },
    });
    await b.bus.nc.flush();
    await a.bus.nc.flush();

    expect(await from("203.0.113.7")).toBe(VerifyCode.FORBIDDEN_IP);
    expect(await from("198.51.100.7")).toBe(VerifyCode.VALID);

    await b.deps.identity.updateIdentity({ caller, identity: identityId, ipAllowList: { entries: [] } });
    await b.bus.nc.flush();
    await a.bus.nc.flush();
    expect(await from("192.0.2.1")).toBe(VerifyCode.VALID);
  });

  it("needs the API's, the key's and the identity's lists all to allow the address", async () => {
    const a = await instance();
    await a.deps.identity.createIdentity({
      caller,
      externalId: "user_three_lists",
      ipAllowList: ["10.0.0.0/8"],
    });
    const { apiId } = await a.client.createApi({ caller, name: "three", ipAllowList: ["10.0.0.0/16"] });
    const { key } = await a.client.createKey({
      caller,
      apiId,
      externalId: "user_three_lists",
      ipAllowList: ["10.0.1.0/24", "10.2.0.0/16"],
    });
    const from = async (clientIp: string) => (await a.client.verifyKey({ caller, key, clientIp })).code;
    expect(await from("10.0.1.9")).toBe(VerifyCode.VALID);
    // In the key's and the identity's lists, not the API's.
    expect(await from("10.2.0.9")).toBe(VerifyCode.FORBIDDEN_IP);
    // In the API's and the identity's, not the key's.
    expect(await from("10.0.2.9")).toBe(VerifyCode.FORBIDDEN_IP);
    // IPv4-mapped IPv6 is the IPv4 it carries.
    expect(await from("::ffff:10.0.1.9")).toBe(VerifyCode.VALID);
  });

  it("refuses a bad CIDR in an identity's list, naming it", async () => {
    const a = await instance();
    await expect(
      a.deps.identity.createIdentity({
        caller,
        externalId: "user_bad",
        ipAllowList: ["10.0.0.0/8", "10.0.0.300/8"],
      }),
    ).rejects.toThrow(/'10\.0\.0\.300\/8' is neither an IP address nor a CIDR/);
  });
});
