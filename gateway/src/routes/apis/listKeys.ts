import { Type } from "@sinclair/typebox";
import { KeyData } from "../../answers.ts";
import { pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, pageFields, Str } from "../../schema.ts";
import { keyResponseData } from "../keys/getKey.ts";

/** data is the page of keys (KeyResponseData), paging in pagination {cursor?, hasMore}. */
export const listKeys = route({
  answer: Type.Array(KeyData),
  paginated: true,
  example: { apiId: "api_123", limit: 100 },
  rootKey: {
    needs: ["api.<apiId>.read_key", "api.<apiId>.read_api"],
    masked: "A root key without these on the API is answered 404, as for an API that does not exist.",
    also: "`decrypt`: also `api.<apiId>.decrypt_key`",
  },
  errors: [404, 412],
  schema: Closed({
    apiId: Str(3, 255, ID_PATTERN),
    limit: pageFields.limit,
    cursor: pageFields.cursor,
    externalId: Type.Optional(Str(1, 255)),
    decrypt: Type.Optional(Type.Boolean()),
    // Unkey's clients may send it; every page is read from the store, so there is no cache to skip.
    revalidateKeysCache: Type.Optional(Type.Boolean()),
  }),
  async handle(input, { caller, services }) {
    const res = await services.keys.listKeys({
      caller,
      apiId: input.apiId,
      limit: input.limit ?? 100,
      cursor: input.cursor ?? "",
      externalId: input.externalId,
      decrypt: input.decrypt ?? false,
    });
    return { data: res.keys.map(keyResponseData), pagination: pagination(res.pagination) };
  },
});
