import { Type } from "@sinclair/typebox";
import { pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Int, Str } from "../../schema.ts";

/** Latchkey's addition: data is the page of namespaces, paging in pagination {cursor?, hasMore}, as apis.listKeys. */
export const listNamespaces = route({
  description:
    "Latchkey's addition (Unkey has no way to list namespaces): the workspace's rate-limit namespaces ordered by id, those the root key may read.",
  answer: Type.Array(
    Closed({
      id: Type.String({ examples: ["rlns_2cGKbMxRyIzhCxo1Idjz8q"] }),
      name: Type.String({ examples: ["email.outbound"] }),
    }),
  ),
  paginated: true,
  example: { limit: 100 },
  rootKey: {
    needs: ["ratelimit.<namespaceId>.read_namespace"],
    also: "lists the namespaces it holds this for; `ratelimit.*.read_namespace` lists all",
  },
  schema: Closed({
    limit: Type.Optional(Int({ minimum: 1, maximum: 100 })),
    cursor: Type.Optional(Str(1, 1024)),
  }),
  async handle(input, { caller, services }) {
    const res = await services.ratelimit.listNamespaces({
      caller,
      page: { limit: input.limit ?? 100, cursor: input.cursor ?? "" },
    });
    return {
      data: res.namespaces.map((ns) => ({ id: ns.id, name: ns.name })),
      pagination: pagination(res.page),
    };
  },
});
