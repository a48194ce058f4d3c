import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.getKey answering 400", () => {
  const h = harness();

  it("names a missing keyId", async () => {
    const res = await h.post("keys.getKey", { decrypt: true });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([{ location: "/body/keyId", message: "keyId is required." }]);
  });

  it("names a decrypt that is not a boolean", async () => {
    const res = await h.post("keys.getKey", { keyId: "key_1", decrypt: "true" });
    expect(res.body.error.errors).toEqual([
      { location: "/body/decrypt", message: "decrypt must be a boolean." },
    ]);
  });
});
