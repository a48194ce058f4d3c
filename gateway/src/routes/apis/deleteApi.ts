import { need } from "@latchkey/runtime";
import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

/** data {}; the API's keys verify NOT_FOUND from the next verification on. */
export const deleteApi = route({
  audited: true,
  answer: Empty,
  example: { apiId: "api_123" },
  rootKey: { needs: ["api.<apiId>.delete_api"] },
  errors: [404],
  schema: Closed({ apiId: Str(3, 255, ID_PATTERN) }),
  permissions: (input) => [need("api", input.apiId, "delete_api")],
  async handle(input, { caller, services }) {
    await services.keys.deleteApi({ caller, apiId: input.apiId });
    return { data: {} };
  },
});
