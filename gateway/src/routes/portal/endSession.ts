import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed } from "../../schema.ts";
import { NO_STORE, sessionAuth } from "./session.ts";

export const endSession = route({
  auth: "portalSession",
  audited: true,
  description:
    "Latchkey's addition: the end user leaves; the session is revoked and its cookie cleared. Same-origin only from a browser.",
  answer: Empty,
  example: {},
  rootKey: { needs: [] },
  schema: Closed({}),
  async handle(_input, ctx) {
    await ctx.services.portal.endSession({ auth: sessionAuth(ctx, true) });
    return { data: {}, headers: { ...NO_STORE, "set-cookie": ctx.web!.clearedCookie() } };
  },
});
