import { MemoryRatelimitStore } from "./memory-ratelimit-store.ts";
import { ratelimitStoreContract } from "./ratelimit-store.contract.ts";

ratelimitStoreContract("memory", () => new MemoryRatelimitStore());
