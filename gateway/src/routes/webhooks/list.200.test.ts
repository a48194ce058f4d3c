import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/webhooks.list answering 200", () => {
  it("answers each webhook in its public shape, disabledReason null unless disabled, with pagination", async () => {
    const h = harness({
      webhooks: {
        listWebhooks(req) {
          expect([req.page?.limit, req.page?.cursor]).toEqual([2, "wh_0"]);
          return {
            webhooks: [
              {
                id: "wh_1",
                url: "https://e.com/a",
                events: ["key.created"],
                description: "a",
                enabled: true,
                createdAt: 5n,
              },
              {
                id: "wh_2",
                url: "https://e.com/b",
                events: ["credits.low"],
                description: "",
                enabled: false,
                disabledReason: "Disabled automatically",
                createdAt: 6n,
              },
            ],
            page: { cursor: "wh_2", hasMore: true },
          };
        },
      },
    });
    const res = await h.post("webhooks.list", { limit: 2, cursor: "wh_0" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      {
        webhookId: "wh_1",
        url: "https://e.com/a",
        events: ["key.created"],
        description: "a",
        enabled: true,
        disabledReason: null,
        createdAt: 5,
      },
      {
        webhookId: "wh_2",
        url: "https://e.com/b",
        events: ["credits.low"],
        description: "",
        enabled: false,
        disabledReason: "Disabled automatically",
        createdAt: 6,
      },
    ]);
    expect(res.body.pagination).toEqual({ cursor: "wh_2", hasMore: true });
  });

  it("refuses a limit over 100", async () => {
    const res = await harness().post("webhooks.list", { limit: 101 });
    expect(res.status).toBe(400);
  });
});
