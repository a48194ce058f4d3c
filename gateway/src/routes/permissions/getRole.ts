import { Role } from "../../answers.ts";
import { roleData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Str } from "../../schema.ts";

/** `role` is a role_ id or a name. */
export const roleRefSchema = Closed({ role: Str(1, 128) });

export const getRole = route({
  answer: Role,
  example: { role: "admin" },
  rootKey: { needs: ["rbac.*.read_role"] },
  errors: [404],
  schema: roleRefSchema,
  async handle(input, { caller, services }) {
    const { role } = await services.identity.getRole({ caller, role: input.role });
    if (!role) throw new Error("GetRole answered without a role");
    return { data: roleData(role) };
  },
});
