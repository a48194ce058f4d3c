import { Permission } from "../../answers.ts";
import { permissionData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, SLUG_PATTERN, Str } from "../../schema.ts";

/** `permission` is a perm_ id or a slug. */
export const permissionRefSchema = Closed({ permission: Str(1, 128, SLUG_PATTERN) });

export const getPermission = route({
  answer: Permission,
  example: { permission: "documents.read" },
  rootKey: { needs: ["rbac.*.read_permission"] },
  errors: [404],
  schema: permissionRefSchema,
  async handle(input, { caller, services }) {
    const { permission } = await services.identity.getPermission({ caller, permission: input.permission });
    if (!permission) throw new Error("GetPermission answered without a permission");
    return { data: permissionData(permission) };
  },
});
