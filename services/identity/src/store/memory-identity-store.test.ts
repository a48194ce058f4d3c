import { identityStoreContract } from "../../testing/identity-store.suite.ts";
import { MemoryIdentityStore } from "./memory-identity-store.ts";

identityStoreContract("memory", () => new MemoryIdentityStore());
