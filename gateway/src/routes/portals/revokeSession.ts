import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

export const revokeSession = route({
  audited: true,
  description:
    "Latchkey's addition: ends a portal session (the `id` `portal.createSession` answered): its code and token stop working at once.",
  answer: Empty,
  example: { sessionId: "ps_123" },
  rootKey: {
    needs: ["portal.<portalId>.revoke_portal_session"],
    masked:
      "A root key without it on the session's portal is answered 404, as for a session that does not exist.",
  },
  errors: [404],
  schema: Closed({ sessionId: Str(3, 255, ID_PATTERN) }),
  async handle(input, { caller, services }) {
    await services.portal.revokeSession({ caller, sessionId: input.sessionId });
    return { data: {} };
  },
});
