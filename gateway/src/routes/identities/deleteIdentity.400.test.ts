import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.deleteIdentity answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/identity", "identity is required."],
    [{ identity: 42 }, "/body/identity", "identity must be a string."],
    [{ identity: "u", permanent: true }, "/body/permanent", "permanent is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("identities.deleteIdentity", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
