import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Str } from "../../schema.ts";
import { NO_STORE } from "./session.ts";

export const exchangeCode = route({
  auth: "none",
  audited: true,
  description:
    "Redeems the code of a portal URL, once, for the session's access token; also sets it as the cookie `portal_session` (HttpOnly, SameSite=Strict, Path=/, Secure when the public URL is https) that the portal's page and Unkey's SDK send. A code used, expired (60 s) or unknown answers 401; each client has a small budget of attempts (429 past it), so codes cannot be guessed.",
  answer: Closed({
    accessToken: Type.String({ examples: ["pat_2cGKbMxRjIzhCxo1IdjH3aZd8Xq4Lm7"] }),
    expiresAt: Type.Integer({ minimum: 0, examples: [1_767_312_000_000] }),
  }),
  example: { code: "pst_2cGKbMxRjIzhCxo1IdjH3a" },
  rootKey: { needs: [] },
  errors: [429],
  schema: Closed({ code: Str(1, 255) }),
  async handle(input, { services, requestId, web }) {
    web!.spendExchange();
    const res = await services.portal.exchangeCode({ code: input.code, requestId });
    const expiresAt = Number(res.expiresAt);
    const cookie = web!.sessionCookie(res.accessToken, expiresAt);
    return {
      data: { accessToken: res.accessToken, expiresAt },
      headers: { ...NO_STORE, "set-cookie": cookie },
    };
  },
});
