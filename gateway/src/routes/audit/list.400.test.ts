import { auditService, MemoryAuditLog } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/auditLogs.list answering 400", () => {
  const none = auditService(new MemoryAuditLog());
  const h = harness({ audit: { keys: none, identity: none, ratelimit: none } });

  it.each([
    [{ limit: 0 }, "/body/limit", "limit must be at least 1."],
    [{ limit: 101 }, "/body/limit", "limit must be at most 100."],
    [{ cursor: "c".repeat(1025) }, "/body/cursor", "cursor must be at most 1024 characters long."],
    [{ outcome: "maybe" }, "/body/outcome", 'outcome must be one of "success", "failure".'],
    [{ start: -1 }, "/body/start", "start must be at least 0."],
    [{ search: "x" }, "/body/search", "search is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("auditLogs.list", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });

  it.each(["not-a-cursor!", "eA", Buffer.from("12.audit_x.y").toString("base64url")])(
    "refuses the cursor %j it did not give, saying what to pass",
    async (cursor) => {
      const res = await h.post("auditLogs.list", { cursor });
      expect(res.status).toBe(400);
      expect(res.body.error.errors).toEqual([
        {
          location: "/body/cursor",
          message: "cursor is not one auditLogs.list answered",
          fix: "Pass pagination.cursor of the previous answer unchanged, or omit cursor to start from the newest record.",
        },
      ]);
    },
  );

  it("refuses an end not after start", async () => {
    const res = await h.post("auditLogs.list", { start: 20, end: 20 });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location: "/body/end" })]);
  });
});
