import { need } from "@latchkey/runtime";
import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Enum, ID_PATTERN, Int, Str } from "../../schema.ts";
import { ApiAnswer, apiData } from "./getApi.ts";

/** Latchkey's addition: data is the API as apis.getApi answers it, after the change. */
export const updateApi = route({
  audited: true,
  description:
    "Latchkey's addition (Unkey cannot change an API after creating it): each field given replaces the API's setting, each omitted stays; `ipAllowList: []` clears the list. A new `keyFormat` applies to keys created afterwards: existing keys keep verifying. New `creditThresholds` (the whole list; `[]`: none, back to CREDITS_LOW_FRACTION) apply at once to every key without thresholds of its own.",
  answer: ApiAnswer,
  example: { apiId: "api_123", name: "billing", expiringNoticeDays: 14 },
  rootKey: { needs: ["api.<apiId>.update_api"] },
  errors: [404],
  schema: Closed({
    apiId: Str(3, 255, ID_PATTERN),
    name: Type.Optional(Str(3, 256)),
    keyFormat: Type.Optional(Enum(["plain", "checksum"] as const)),
    leakPolicy: Type.Optional(Enum(["revoke", "flag"] as const)),
    ipAllowList: Type.Optional(Type.Array(Str(2, 64), { maxItems: 100 })),
    expiringNoticeDays: Type.Optional(Int({ maximum: 365 })),
    // The whole new list of credits.low thresholds in percent, as createApi takes it (docs/api.md, Credit thresholds).
    creditThresholds: Type.Optional(Type.Array(Int({ maximum: 100 }), { maxItems: 10 })),
  }),
  permissions: (input) => [need("api", input.apiId, "update_api")],
  async handle(input, { caller, services }) {
    const { api } = await services.keys.updateApi({
      caller,
      apiId: input.apiId,
      name: input.name,
      keyFormat: input.keyFormat,
      leakPolicy: input.leakPolicy,
      ipAllowList: input.ipAllowList && { values: input.ipAllowList },
      expiringNoticeDays: input.expiringNoticeDays,
      creditThresholds: input.creditThresholds && { values: input.creditThresholds },
    });
    if (!api) throw new Error("UpdateApi answered without an api");
    return { data: apiData(api) };
  },
});
