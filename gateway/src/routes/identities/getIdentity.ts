import { Identity } from "../../answers.ts";
import { identityData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Str } from "../../schema.ts";

/** `identity` is an identity id or an externalId, as in Unkey's v2 API. */
export const identityRefSchema = Closed({ identity: Str(1, 255) });

export const getIdentity = route({
  answer: Identity,
  example: { identity: "user_42" },
  rootKey: { needs: ["identity.*.read_identity"] },
  errors: [404],
  schema: identityRefSchema,
  async handle(input, { caller, services }) {
    const { identity } = await services.identity.getIdentity({ caller, identity: input.identity });
    if (!identity) throw new Error("GetIdentity answered without an identity");
    return { data: identityData(identity) };
  },
});
