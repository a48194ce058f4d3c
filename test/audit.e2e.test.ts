import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./harness.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

describe("the audit log through the gateway (separate processes)", () => {
  it("lists the records keys, identity and ratelimit wrote, each with its request's id, newest first", async () => {
    const api = await stack.call("apis.createApi", { name: "audited" });
    const identity = await stack.call("identities.createIdentity", { externalId: "user_audit" });
    const missing = await stack.call("keys.deleteKey", { keyId: "key_missing0000000" });
    expect([api.status, identity.status, missing.status]).toEqual([200, 200, 404]);

    const list = await stack.call("auditLogs.list", { limit: 100 });
    expect(list.status).toBe(200);
    const byRequest = (res: { body: { meta: { requestId: string } } }) =>
      list.body.data.filter((r: { requestId: string }) => r.requestId === res.body.meta.requestId);
    expect(byRequest(api)).toEqual([
      expect.objectContaining({
        operation: "apis.createApi",
        resources: [{ type: "api", id: api.body.data.apiId }],
        outcome: "success",
        error: null,
        fields: ["name"],
      }),
    ]);
    expect(byRequest(identity)).toEqual([
      expect.objectContaining({ operation: "identities.createIdentity", outcome: "success" }),
    ]);
    expect(byRequest(missing)).toEqual([
      expect.objectContaining({
        operation: "keys.deleteKey",
        outcome: "failure",
        error: { code: "KEY_NOT_FOUND" },
      }),
    ]);
    const times = list.body.data.map((r: { time: number }) => r.time);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });
});
