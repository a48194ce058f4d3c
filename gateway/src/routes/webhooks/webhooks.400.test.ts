import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

// webhooks.create has its own file (create.400.test.ts): its URL and event rules are the most.
describe("POST /v2/webhooks.{list,update,delete,listDeliveries,redeliver} answering 400", () => {
  it.each([
    ["webhooks.list", { limit: 0 }, "/body/limit"],
    ["webhooks.list", { cursor: "c".repeat(10_000) }, "/body/cursor"],
    ["webhooks.list", { extra: 1 }, "/body/extra"],
    ["webhooks.update", { enabled: true }, "/body/webhookId"],
    ["webhooks.update", { webhookId: "" }, "/body/webhookId"],
    ["webhooks.update", { webhookId: "wh_1", enabled: "yes" }, "/body/enabled"],
    ["webhooks.update", { webhookId: "wh_1", events: [] }, "/body/events"],
    ["webhooks.update", { webhookId: "wh_1", url: `https://e.com/${"a".repeat(2048)}` }, "/body/url"],
    ["webhooks.update", { webhookId: "wh_1", description: "d".repeat(256) }, "/body/description"],
    ["webhooks.delete", {}, "/body/webhookId"],
    ["webhooks.delete", { webhookId: "w".repeat(256) }, "/body/webhookId"],
    ["webhooks.delete", { webhookId: "wh_1", force: true }, "/body/force"],
    ["webhooks.listDeliveries", {}, "/body/webhookId"],
    ["webhooks.listDeliveries", { webhookId: "wh_1", status: "sent" }, "/body/status"],
    ["webhooks.listDeliveries", { webhookId: "wh_1", limit: 101 }, "/body/limit"],
    ["webhooks.redeliver", { webhookId: "wh_1" }, "/body/deliveryId"],
    ["webhooks.redeliver", { webhookId: "wh_1", deliveryId: "" }, "/body/deliveryId"],
    ["webhooks.redeliver", { deliveryId: "dlv_1" }, "/body/webhookId"],
  ] as const)("%s refuses %j at %s, asking no service", async (operation, body, location) => {
    const h = harness();
    const res = await h.post(operation, body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toContain(location);
  });
});
