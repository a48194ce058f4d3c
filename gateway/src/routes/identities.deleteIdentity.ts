import { route } from "../route.ts";
import { identityRefSchema } from "./identities.getIdentity.ts";

/** The reference answers `meta` alone: no `data` (notes a.12). */
export const deleteIdentity = route({
  schema: identityRefSchema,
  async handle(input, { caller, services }) {
    await services.identity.deleteIdentity({ caller, identity: input.identity });
    return {};
  },
});
