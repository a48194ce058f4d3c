import type { Api } from "@latchkey/proto/keys/v1/keys_pb";
import { need } from "@latchkey/runtime";
import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

/** An API as apis.getApi and apis.updateApi answer it. */
export const ApiAnswer = Closed({
  id: Type.String({ examples: ["api_2cGKbMxRyIzhCxo1Idjz8q"] }),
  name: Type.String({ examples: ["payments"] }),
  keyFormat: Type.Optional(Type.String({ enum: ["plain", "checksum"], examples: ["plain"] })),
  leakPolicy: Type.Optional(Type.String({ enum: ["revoke", "flag"], examples: ["revoke"] })),
  ipAllowList: Type.Optional(Type.Array(Type.String({ examples: ["203.0.113.0/24"] }))),
  expiringNoticeDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 365, examples: [7] })),
  creditThresholds: Type.Optional(Type.Array(Type.Integer({ minimum: 0, maximum: 100, examples: [50] }))),
});

export const apiData = (api: Api) => ({
  id: api.id,
  name: api.name,
  keyFormat: api.keyFormat || "plain",
  leakPolicy: api.leakPolicy || "revoke",
  ...(api.ipAllowList.length > 0 && { ipAllowList: api.ipAllowList }),
  expiringNoticeDays: api.expiringNoticeDays,
  ...(api.creditThresholds.length > 0 && { creditThresholds: api.creditThresholds }),
});

export const getApi = route({
  answer: ApiAnswer,
  example: { apiId: "api_123" },
  rootKey: { needs: ["api.<apiId>.read_api"] },
  errors: [404],
  schema: Closed({ apiId: Str(3, 255, ID_PATTERN) }),
  permissions: (input) => [need("api", input.apiId, "read_api")],
  async handle(input, { caller, services }) {
    const { api } = await services.keys.getApi({ caller, apiId: input.apiId });
    if (!api) throw new Error("GetApi answered without an api");
    return { data: apiData(api) };
  },
});
