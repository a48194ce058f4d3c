import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, HARNESS_SESSION, harness } from "../../../testing/in-memory-gateway.ts";
import { type Operation, routes } from "../index.ts";

const SESSION_CALLS = (Object.keys(routes) as Operation[]).filter((o) => routes[o].auth === "portalSession");

describe("the portal's session calls and their cookie", () => {
  it("are the six Unkey's SDK and the portal's page make", () => {
    expect(SESSION_CALLS.sort()).toEqual([
      "portal.createKey",
      "portal.endSession",
      "portal.getSession",
      "portal.getVerifications",
      "portal.listKeys",
      "portal.rerollKey",
    ]);
  });

  it.each(SESSION_CALLS)(
    "%s answers 401 without the portal_session cookie, calling nothing",
    async (operation) => {
      let called = 0;
      const h = harness({
        portal: Object.fromEntries(
          ["getSession", "endSession", "listKeys", "createKey", "rerollKey", "getVerifications"].map((m) => [
            m,
            () => {
              called++;
              return {};
            },
          ]),
        ),
      });
      for (const cookie of [null, "other=1", "portal_session=", "portal_sessionx=pat_1"]) {
        const res = await h.post(operation, routes[operation].example, { cookie, authorization: null });
        expect([res.status, res.body.error.type, res.body.error.detail]).toEqual([
          401,
          `${DOCS}unkey/authentication/key_not_found`,
          "This call needs a portal session: send the portal_session cookie that portal.exchangeCode set.",
        ]);
      }
      expect(called).toBe(0);
    },
  );

  it("hands the cookie's token to the service, ignores any root key, and relays its 401", async () => {
    const tokens: string[] = [];
    const h = harness({
      portal: {
        listKeys(req) {
          tokens.push(req.auth!.token);
          throw domainError(
            ErrorReason.UNAUTHENTICATED,
            "The portal session is unknown, expired or revoked.",
          );
        },
      },
    });
    const res = await h.post("portal.listKeys", {}, { key: "root_nobody_has_this" });
    expect([res.status, res.body.error.detail]).toEqual([
      401,
      "The portal session is unknown, expired or revoked.",
    ]);
    await h.post("portal.listKeys", {}, { cookie: "a=b; portal_session=pat_2 ; c=d", authorization: null });
    expect(tokens).toEqual([HARNESS_SESSION, "pat_2"]);
  });

  it("portal.exchangeCode needs no root key and answers the token, the cookie and no-store", async () => {
    const h = harness({
      portal: {
        exchangeCode: () => ({ accessToken: "pat_new", expiresAt: BigInt(h.clock.now() + 3_600_000) }),
      },
    });
    const res = await h.post("portal.exchangeCode", { code: "pst_1" }, { authorization: null, cookie: null });
    expect(res.status).toBe(200);
    expect(res.body.data.accessToken).toBe("pat_new");
    expect(res.headers["set-cookie"]).toMatch(
      /^portal_session=pat_new; Max-Age=3600; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    expect([res.headers["cache-control"], res.headers["pragma"]]).toEqual(["no-store", "no-cache"]);
    expect(Object.keys(res.headers).filter((k) => k.startsWith("access-control-"))).toEqual([]);
  });
});
