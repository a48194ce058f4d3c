import { portalStoreContract } from "../../testing/portal-store.suite.ts";
import { MemoryPortalStore } from "./memory-portal-store.ts";

portalStoreContract("memory", () => new MemoryPortalStore());
