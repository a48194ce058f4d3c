import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.createApi answering 400", () => {
  const h = harness({ keys: { createApi: () => ({ apiId: "api_1" }) } });

  it("names a name shorter than 3 characters", async () => {
    const res = await h.post("apis.createApi", { name: "ab" });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.title).toBe("Bad Request");
    expect(res.body.error.errors).toEqual([
      { location: "/body/name", message: "name must be at least 3 characters long." },
    ]);
  });

  it("names a keyFormat or leakPolicy that is not one of Latchkey's", async () => {
    const res = await h.post("apis.createApi", {
      name: "payments",
      keyFormat: "crc32",
      leakPolicy: "delete",
    });
    expect(res.status).toBe(400);
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toEqual([
      "/body/keyFormat",
      "/body/leakPolicy",
    ]);
  });

  it("names a missing name", async () => {
    const res = await h.post("apis.createApi", {});
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([{ location: "/body/name", message: "name is required." }]);
  });

  it("names a name of the wrong type", async () => {
    const res = await h.post("apis.createApi", { name: 42 });
    expect(res.body.error.errors).toEqual([{ location: "/body/name", message: "name must be a string." }]);
  });

  it("names an unknown field and says to remove it", async () => {
    const res = await h.post("apis.createApi", { name: "payments", workspaceId: "ws_1" });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      {
        location: "/body/workspaceId",
        message: "workspaceId is not a field of this operation.",
        fix: "Remove 'workspaceId' or check its spelling.",
      },
    ]);
  });

  it("validates the body before authenticating", async () => {
    const res = await h.post("apis.createApi", { name: "ab" }, { authorization: null });
    expect(res.status).toBe(400);
  });
});
