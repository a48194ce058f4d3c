import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, SLUG_PATTERN, Str } from "../../schema.ts";

export const createPermission = route({
  audited: true,
  answer: Closed({ permissionId: Type.String({ examples: ["perm_2cGKbMxRjIzhCxo1IdjH3a"] }) }),
  example: { name: "documents.read", slug: "documents.read" },
  rootKey: { needs: ["rbac.*.create_permission"] },
  errors: [409],
  schema: Closed({
    name: Str(1, 512),
    slug: Str(1, 128, SLUG_PATTERN),
    description: Type.Optional(Str(0, 512)),
  }),
  async handle(input, { caller, services }) {
    const res = await services.identity.createPermission({ caller, ...input });
    return { data: { permissionId: res.permissionId } };
  },
});
