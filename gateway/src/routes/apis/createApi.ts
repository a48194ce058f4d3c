import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Str } from "../../schema.ts";

export const createApi = route({
  audited: true,
  answer: Closed({ apiId: Type.String({ examples: ["api_2cGKbMxRyIzhCxo1Idjz8q"] }) }),
  example: { name: "payments" },
  rootKey: { needs: ["api.*.create_api"] },
  schema: Closed({ name: Str(3, 256) }),
  permissions: () => ["api.*.create_api"],
  async handle(input, { caller, services }) {
    const res = await services.keys.createApi({ caller, name: input.name });
    return { data: { apiId: res.apiId } };
  },
});
