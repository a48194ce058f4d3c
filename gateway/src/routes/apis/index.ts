import type { Route } from "../../route.ts";
import { createApi } from "./createApi.ts";
import { deleteApi } from "./deleteApi.ts";
import { getApi } from "./getApi.ts";
import { listApis } from "./listApis.ts";
import { listKeys } from "./listKeys.ts";
import { updateApi } from "./updateApi.ts";

export const apisRoutes = {
  "apis.createApi": createApi,
  "apis.getApi": getApi,
  "apis.listKeys": listKeys,
  "apis.listApis": listApis,
  "apis.deleteApi": deleteApi,
  "apis.updateApi": updateApi,
} satisfies Record<`apis.${string}`, Route>;
