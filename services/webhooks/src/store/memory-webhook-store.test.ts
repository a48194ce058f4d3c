import { MemoryWebhookStore } from "./memory-webhook-store.ts";
import { webhookStoreContract } from "./webhook-store.contract.ts";

webhookStoreContract("memory", () => new MemoryWebhookStore());
