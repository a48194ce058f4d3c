import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Int } from "../../schema.ts";
import { BodyPolicy, definitionJson } from "./stored-policy.ts";

/**
 * data {policyId, position}: the policy takes effect on the next forward-auth request. Its apiId
 * must name an API of the workspace: any other (missing, deleted, another workspace's) is 404
 * data/api_not_found, as keys.createKey answers it.
 */
export const createPolicy = route({
  audited: true,
  answer: Closed({
    policyId: Type.String({ examples: ["fap_4kLm9QzT2xWvB8nE"] }),
    position: Type.Optional(Type.Integer({ minimum: 0 })),
  }),
  example: {
    policy: {
      name: "orders",
      hosts: ["api.example.com"],
      paths: ["/v1/orders/**"],
      apiId: "api_123",
      permissions: "orders.read",
    },
    position: 0,
  },
  rootKey: { needs: ["forward_auth.*.create_policy"] },
  errors: [404, 409, 412],
  schema: Closed({
    policy: BodyPolicy,
    /** Where it goes in match order, from 0 (the first match wins); default: last. */
    position: Type.Optional(Int({ maximum: 1000 })),
    /** The workspace's default, matching what no other policy matches: no hosts, paths or methods. */
    default: Type.Optional(Type.Boolean()),
  }),
  permissions: () => ["forward_auth.*.create_policy"],
  async handle(input, { caller, services }) {
    const isDefault = input.default === true;
    const res = await services.keys.createForwardAuthPolicy({
      caller,
      definitionJson: definitionJson(input.policy),
      position: isDefault ? undefined : input.position,
      isDefault,
    });
    return { data: { policyId: res.policyId, ...(isDefault ? {} : { position: res.position }) } };
  },
});
