import { create } from "@bufbuild/protobuf";
import { PageRequestSchema } from "@latchkey/proto/common/v1/common_pb";
import type { ListOverridesResponse } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { type Static, Type } from "@sinclair/typebox";
import { OverrideData } from "../../answers.ts";
import type { Reply, RouteContext } from "../../route.ts";
import { route } from "../../route.ts";
import { Closed, Int, Str } from "../../schema.ts";
import { override } from "./getOverride.ts";

const schema = Closed({
  namespace: Str(1, 512),
  limit: Type.Optional(Int({ minimum: 1, maximum: 100 })),
  cursor: Type.Optional(Str(1, 1024)),
});

async function list(input: Static<typeof schema>, { caller, services }: RouteContext) {
  return services.ratelimit.listOverrides({
    caller,
    namespace: input.namespace,
    page: create(PageRequestSchema, { limit: input.limit ?? 10, cursor: input.cursor ?? "" }),
  });
}

const nextCursor = (res: ListOverridesResponse) =>
  res.page?.hasMore && res.page.cursor !== "" ? res.page.cursor : undefined;

/** Latchkey's shape: data {overrides, cursor}, cursor only when another page exists. */
export const listOverrides = route({
  description:
    "Answers `data: {overrides, cursor?}`, Latchkey's shape; `/v2/ratelimit.listOverrides` answers Unkey's list with `pagination`.",
  answer: Closed({ overrides: Type.Array(OverrideData), cursor: Type.Optional(Type.String()) }),
  example: { namespace: "email" },
  rootKey: { needs: ["ratelimit.<namespace>.read_override"] },
  errors: [404],
  schema,
  async handle(input, ctx): Promise<Reply> {
    const res = await list(input, ctx);
    const cursor = nextCursor(res);
    return {
      data: { overrides: res.overrides.map(override), ...(cursor === undefined ? {} : { cursor }) },
    };
  },
});

/** Unkey's shape: data is the array, paging in pagination {cursor, hasMore}. */
export const listOverridesUnkey = route({
  answer: Type.Array(OverrideData),
  paginated: true,
  example: { namespace: "email" },
  rootKey: { needs: ["ratelimit.<namespace>.read_override"] },
  errors: [404],
  schema,
  async handle(input, ctx): Promise<Reply> {
    const res = await list(input, ctx);
    const cursor = nextCursor(res);
    return {
      data: res.overrides.map(override),
      pagination: { ...(cursor === undefined ? {} : { cursor }), hasMore: cursor !== undefined },
    };
  },
});
