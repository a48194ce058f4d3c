import type { Route } from "../../route.ts";
import { list } from "./list.ts";

export const auditRoutes = {
  "auditLogs.list": list,
} satisfies Record<`auditLogs.${string}`, Route>;
