import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const valid = { name: "Read documents", slug: "documents.read" };

describe("POST /v2/permissions.createPermission answering 400", () => {
  const h = harness();

  it.each([
    [{ slug: "documents.read" }, "/body/name", "name is required."],
    [{ name: "n" }, "/body/slug", "slug is required."],
    [{ ...valid, name: "n".repeat(513) }, "/body/name", "name must be at most 512 characters long."],
    [{ ...valid, slug: "s".repeat(129) }, "/body/slug", "slug must be at most 128 characters long."],
    [
      { ...valid, slug: "documents read" },
      "/body/slug",
      "slug must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
    ],
    [
      { ...valid, description: "d".repeat(513) },
      "/body/description",
      "description must be at most 512 characters long.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.createPermission", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
