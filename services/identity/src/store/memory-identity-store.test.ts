import { identityStoreContract } from "./identity-store.contract.ts";
import { MemoryIdentityStore } from "./memory-identity-store.ts";

identityStoreContract("memory", () => new MemoryIdentityStore());
