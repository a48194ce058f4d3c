import { Type } from "@sinclair/typebox";
import { pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";

/** Latchkey's addition: data is the page of APIs, paging in pagination {cursor?, hasMore}, as apis.listKeys. */
export const listApis = route({
  description:
    "Latchkey's addition (Unkey has no way to list APIs): the workspace's APIs ordered by id, those the root key may read.",
  answer: Type.Array(
    Closed({
      id: Type.String({ examples: ["api_2cGKbMxRyIzhCxo1Idjz8q"] }),
      name: Type.String({ examples: ["payments"] }),
      createdAt: Type.Integer({ minimum: 0, examples: [1_767_225_600_000] }),
    }),
  ),
  paginated: true,
  example: { limit: 100 },
  rootKey: {
    needs: ["api.<apiId>.read_api"],
    also: "lists the APIs it holds this for; `api.*.read_api` lists all",
  },
  schema: Closed({ limit: pageFields.limit, cursor: pageFields.cursor }),
  async handle(input, { caller, services }) {
    const res = await services.keys.listApis({
      caller,
      limit: input.limit ?? 100,
      cursor: input.cursor ?? "",
    });
    return {
      data: res.apis.map((a) => ({ id: a.id, name: a.name, createdAt: Number(a.createdAt) })),
      pagination: pagination(res.pagination),
    };
  },
});
