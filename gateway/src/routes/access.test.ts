import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { requirePermissions } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { answeringEverything, DOCS, harness, WORKSPACE } from "../../testing/in-memory-gateway.ts";
import { OPERATIONS, routes } from "./index.ts";

/** A permission no operation needs. */
const UNRELATED = "ratelimit.ns_unrelated.read_override";

/**
 * The permissions an operation needs for its example body: `<apiId>` and the like filled from
 * the body, `*` where the body does not name the resource (a key's API is the service's to find).
 */
function neededFor(example: unknown, needs: string[]): string[] {
  const body = (example ?? {}) as Record<string, unknown>;
  return needs.map((n) => n.replace(/<(\w+)>/g, (_, field: string) => String(body[field] ?? "*")));
}

/**
 * Every operation, driven with its example body: without a valid root key it answers 401 and
 * calls nothing but the root-key lookup; with a root key lacking what `rootKey.needs` names it
 * is refused: by the gateway's own check before any call, or by the service, which must be handed
 * the caller and whose refusal is relayed; with a root key holding just those, 200. The services
 * here are fakes that refuse with 403 whatever the operation, so what this proves of the
 * services is only that the gateway passes them the caller and relays their verdict; the real
 * answers, 404 where `rootKey.masked` says so, are test/openapi.e2e.test.ts's.
 */
// The portal's session calls and the code exchange take no root key: gateway/src/routes/portal/session.401.test.ts.
describe.each(OPERATIONS.filter((o) => routes[o].auth === undefined))("%s and its root key", (operation) => {
  const route = routes[operation];
  const needed = neededFor(route.example, route.rootKey.needs);
  const calls: { rpc: string; caller: Caller | undefined }[] = [];
  const h = harness(
    answeringEverything((caller, rpc) => {
      calls.push({ rpc, caller });
      if (!caller) throw new Error(`${rpc} was called without the caller`);
      requirePermissions(caller, needed);
    }),
  );
  const body = route.example;

  it("answers 401 authentication/missing without an Authorization header", async () => {
    const res = await h.post(operation, body, { authorization: null });
    expect(res.status).toBe(401);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authentication/missing`);
    expect(res.body.meta.requestId).toMatch(/^req_[a-zA-Z0-9]{16}$/);
  });

  it.each([
    ["Basic dXNlcjpwYXNz"],
    ["Bearer"],
    ["Bearer "],
    ["Bearer two words"],
    ["root_key_without_scheme"],
  ])("answers 401 authentication/malformed for the header '%s'", async (authorization) => {
    const res = await h.post(operation, body, { authorization });
    expect(res.status).toBe(401);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authentication/malformed`);
  });

  it("answers 401 authentication/key_not_found for an unknown root key", async () => {
    const res = await h.post(operation, body, { key: "root_nobody_has_this" });
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({
      title: "Unauthorized",
      detail: "The provided root key is invalid. We could not find the requested key.",
      status: 401,
      type: `${DOCS}unkey/authentication/key_not_found`,
    });
  });

  it("calls no operation RPC without a valid root key", () => {
    expect(calls).toEqual([]);
  });

  it(`answers 403 naming ${route.rootKey.needs.join(", ")} to a root key without them`, async () => {
    calls.length = 0;
    const res = await h.post(operation, body, { key: h.rootKey(UNRELATED) });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({
      title: "Insufficient Permissions",
      detail: `The root key lacks the permission${needed.length > 1 ? "s" : ""} ${needed.map((n) => `'${n}'`).join(", ")}.`,
      status: 403,
      type: `${DOCS}unkey/authorization/insufficient_permissions`,
    });
    if (route.permissions) {
      // Checked by the gateway, before any call.
      expect(calls).toEqual([]);
    } else {
      expect(calls.map((c) => c.caller)).toEqual([
        expect.objectContaining({ workspaceId: WORKSPACE, permissions: [UNRELATED] }),
      ]);
    }
  });

  it("answers 200 to a root key holding just those", async () => {
    const res = await h.post(operation, body, { key: h.rootKey(...needed) });
    expect(res.status).toBe(200);
  });
});
