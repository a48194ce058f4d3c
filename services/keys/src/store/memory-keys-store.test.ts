import { keysStoreContract } from "../../testing/keys-store.suite.ts";
import { MemoryKeysStore } from "./memory-keys-store.ts";

keysStoreContract("memory", async () => {
  const store = new MemoryKeysStore();
  return {
    store,
    workspaces: ["ws_default", "ws_other"],
    addRootKey: async (r) => store.putRootKey(r),
    deleteApi: async (id) => store.patchApi(id, { deletedAt: 1 }),
  };
});
