import type { Route } from "../../route.ts";
import { create } from "./create.ts";
import { deleteWebhook } from "./delete.ts";
import { list } from "./list.ts";
import { listDeliveries } from "./listDeliveries.ts";
import { redeliver } from "./redeliver.ts";
import { update } from "./update.ts";

export const webhooksRoutes = {
  "webhooks.create": create,
  "webhooks.list": list,
  "webhooks.update": update,
  "webhooks.delete": deleteWebhook,
  "webhooks.listDeliveries": listDeliveries,
  "webhooks.redeliver": redeliver,
} satisfies Record<`webhooks.${string}`, Route>;
