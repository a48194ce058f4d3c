import { ratelimitStoreContract } from "../../testing/ratelimit-store.suite.ts";
import { MemoryRatelimitStore } from "./memory-ratelimit-store.ts";

ratelimitStoreContract("memory", () => new MemoryRatelimitStore());
