import { Type } from "@sinclair/typebox";
import { KeyData } from "../../answers.ts";
import { pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";
import { keyResponseData } from "../keys/getKey.ts";
import { NO_STORE, sessionAuth } from "./session.ts";

export const listKeys = route({
  auth: "portalSession",
  description:
    "The session's end user's keys in the portal's API (those of its externalId's identity), by key id, as `apis.listKeys` answers them. Needs the scope `keys:read`.",
  answer: Type.Array(KeyData),
  paginated: true,
  example: {},
  rootKey: { needs: [] },
  schema: Closed({ limit: pageFields.limit, cursor: pageFields.cursor }),
  async handle(input, ctx) {
    const res = await ctx.services.portal.listKeys({
      auth: sessionAuth(ctx, false),
      limit: input.limit,
      cursor: input.cursor ?? "",
    });
    return { data: res.keys.map(keyResponseData), pagination: pagination(res.pagination), headers: NO_STORE };
  },
});
