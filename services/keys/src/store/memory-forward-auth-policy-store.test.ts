import { MemoryAuditLog } from "@latchkey/runtime";
import { policyStoreContract } from "../../testing/forward-auth-policy-store.suite.ts";
import { MemoryPolicyStore } from "./memory-forward-auth-policy-store.ts";

policyStoreContract("memory", async () => ({
  store: new MemoryPolicyStore(new MemoryAuditLog()),
  workspaces: [`ws_${Math.random().toString(36).slice(2)}`, `ws_${Math.random().toString(36).slice(2)}`],
}));
