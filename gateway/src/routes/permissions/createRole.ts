import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, SLUG_PATTERN, Str } from "../../schema.ts";

/** Slugs that do not exist yet are created when the root key holds rbac.*.create_permission. */
export const createRole = route({
  audited: true,
  answer: Closed({ roleId: Type.String({ examples: ["role_2cGKbMxRjIzhCxo1IdjH3a"] }) }),
  example: { name: "admin" },
  rootKey: {
    needs: ["rbac.*.create_role"],
    also: "with `permissions`: also `rbac.*.add_permission_to_role`",
  },
  errors: [409],
  schema: Closed({
    name: Str(1, 128),
    description: Type.Optional(Str(0, 512)),
    permissions: Type.Optional(Type.Array(Str(1, 128, SLUG_PATTERN), { maxItems: 1000 })),
  }),
  async handle(input, { caller, services }) {
    const res = await services.identity.createRole({
      caller,
      name: input.name,
      description: input.description,
      permissions: input.permissions ?? [],
    });
    return { data: { roleId: res.roleId } };
  },
});
