import { webhookStoreContract } from "../../testing/webhook-store.suite.ts";
import { MemoryWebhookStore } from "./memory-webhook-store.ts";

webhookStoreContract("memory", () => new MemoryWebhookStore());
