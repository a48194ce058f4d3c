import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, root } from "../../testing/in-memory-portal.ts";
import { hashOf } from "../tokens.ts";

describe("ExchangeCode and the session's token", () => {
  it("redeems a code once for a token kept only as its hash, lasting the portal's sessionTtlMs", async () => {
    const { client, deps, clock } = await harness();
    const minted = await client.createSession({
      caller: root("*"),
      portal: "acme",
      externalId: "u",
      scopes: ["keys:read"],
    });
    clock.advance(1_000);
    const res = await client.exchangeCode({ code: minted.code, requestId: "req_1" });
    expect(res.accessToken).toMatch(/^pat_[A-Za-z0-9_-]{43}$/);
    expect(res.expiresAt).toBe(BigInt(clock.now() + 3_600_000));
    const stored = deps.store.sessions.get(minted.sessionId)!;
    expect([stored.tokenHash, stored.codeHash]).toEqual([hashOf(res.accessToken), null]);
    await expectReason(
      client.exchangeCode({ code: minted.code, requestId: "" }),
      ErrorReason.UNAUTHENTICATED,
    );
    const audit = deps.store.records.filter((r) => r.operation === "portal.exchangeCode");
    expect(audit.map((r) => [r.actorType, r.actorId, r.requestId])).toEqual([
      ["portal_session", minted.sessionId, "req_1"],
    ]);
    expect(JSON.stringify(deps.store.records)).not.toContain(res.accessToken);
  });

  it("answers a session that expired, was revoked or ended 401 in the same words", async () => {
    const { client, clock } = await harness();
    const open = async () => {
      const minted = await client.createSession({
        caller: root("*"),
        portal: "acme",
        externalId: "u",
        scopes: ["keys:read"],
      });
      const { accessToken } = await client.exchangeCode({ code: minted.code, requestId: "" });
      return { id: minted.sessionId, auth: { token: accessToken, requestId: "" } };
    };
    const message =
      "The portal session is unknown, expired or revoked; open the portal again from the application.";
    const a = await open();
    expect((await client.getSession({ auth: a.auth })).session?.externalId).toBe("u");
    await client.revokeSession({ caller: root("*"), sessionId: a.id });
    await expectReason(client.getSession({ auth: a.auth }), ErrorReason.UNAUTHENTICATED, { message });
    const b = await open();
    await client.endSession({ auth: b.auth });
    await expectReason(client.getSession({ auth: b.auth }), ErrorReason.UNAUTHENTICATED, { message });
    const c = await open();
    clock.advance(3_600_000);
    await expectReason(client.getSession({ auth: c.auth }), ErrorReason.UNAUTHENTICATED, { message });
    await expectReason(
      client.getSession({ auth: { token: "pat_made_up", requestId: "" } }),
      ErrorReason.UNAUTHENTICATED,
      {
        message,
      },
    );
    // Revoking takes the portal's permission: without it, the session answers as a missing one.
    const d = await open();
    await expectReason(
      client.revokeSession({ caller: root("portal.portal_other.revoke_portal_session"), sessionId: d.id }),
      ErrorReason.PORTAL_SESSION_NOT_FOUND,
    );
  });
});
