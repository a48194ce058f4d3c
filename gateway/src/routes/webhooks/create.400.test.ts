import { domainError, ErrorReason, invalidInput } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/webhooks.create answering 400", () => {
  it.each([
    [{ url: "https://e.com", events: [] }, "/body/events"],
    [{ url: "https://e.com", events: ["key.created", "key.created"] }, "/body/events"],
    [{ url: "https://e.com", events: ["key.exploded"] }, "/body/events/0"],
    [{ url: "https://e.com", events: ["key.created"], description: "d".repeat(256) }, "/body/description"],
    [{ url: `https://e.com/${"a".repeat(2048)}`, events: ["key.created"] }, "/body/url"],
    [{ events: ["key.created"] }, "/body/url"],
    [{ url: "https://e.com", events: ["key.created"], secret: "mine" }, "/body/secret"],
  ])("refuses %j at %s", async (body, location) => {
    const h = harness();
    const res = await h.post("webhooks.create", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toContain(location);
  });

  it("passes on the service's reason for a refused URL", async () => {
    const h = harness({
      webhooks: {
        createWebhook() {
          throw invalidInput(
            "/url",
            "url points at 127.0.0.1 is a loopback address: webhooks are delivered only to public addresses",
          );
        },
      },
    });
    const res = await h.post("webhooks.create", { url: "http://127.0.0.1/x", events: ["key.created"] });
    expect(res.status).toBe(400);
    expect(res.body.error.detail).toBe(
      "url points at 127.0.0.1 is a loopback address: webhooks are delivered only to public addresses",
    );
  });

  it("answers 412 when the workspace has as many webhooks as it may", async () => {
    const h = harness({
      webhooks: {
        createWebhook() {
          throw domainError(
            ErrorReason.PRECONDITION_FAILED,
            "The workspace already has 20 webhooks, the most it may have; delete one first.",
          );
        },
      },
    });
    const res = await h.post("webhooks.create", { url: "https://e.com", events: ["key.created"] });
    expect(res.status).toBe(412);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/precondition_failed`);
  });
});
