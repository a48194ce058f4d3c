import { Type } from "@sinclair/typebox";
import { Identity } from "../../answers.ts";
import { identityData, pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";

export const listIdentities = route({
  answer: Type.Array(Identity),
  paginated: true,
  example: {},
  rootKey: { needs: ["identity.*.read_identity"] },
  schema: Closed(pageFields),
  async handle(input, { caller, services }) {
    const res = await services.identity.listIdentities({
      caller,
      page: { limit: input.limit ?? 100, cursor: input.cursor ?? "" },
      search: input.search ?? "",
    });
    return { data: res.identities.map(identityData), pagination: pagination(res.page) };
  },
});
