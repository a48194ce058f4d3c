import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { permissionRefSchema } from "./getPermission.ts";

export const deletePermission = route({
  audited: true,
  answer: Empty,
  example: { permission: "documents.read" },
  rootKey: { needs: ["rbac.*.delete_permission"] },
  errors: [404],
  schema: permissionRefSchema,
  async handle(input, { caller, services }) {
    await services.identity.deletePermission({ caller, permission: input.permission });
    return { data: {} };
  },
});
