import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { identityRefSchema } from "./getIdentity.ts";

/** Answers `data: {}`: every success carries data (Unkey's answer, `meta` alone, lacks it; its clients ignore it). */
export const deleteIdentity = route({
  audited: true,
  description:
    "Answers `data: {}` (Unkey's answer has `meta` alone); Unkey's clients ignore the extra field.",
  answer: Empty,
  example: { identity: "user_42" },
  rootKey: { needs: ["identity.*.delete_identity"] },
  errors: [404],
  schema: identityRefSchema,
  async handle(input, { caller, services }) {
    await services.identity.deleteIdentity({ caller, identity: input.identity });
    return { data: {} };
  },
});
