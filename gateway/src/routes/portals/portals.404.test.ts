import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

const missing = () => {
  throw domainError(ErrorReason.PORTAL_NOT_FOUND, "The portal 'portal_1' does not exist.");
};

describe("portals.* answering 404 and 409", () => {
  it.each([
    "portals.getPortal",
    "portals.updatePortal",
    "portals.deletePortal",
    "portal.createSession",
  ] as const)("%s answers data/portal_not_found", async (operation) => {
    const h = harness({
      portal: { getPortal: missing, updatePortal: missing, deletePortal: missing, createSession: missing },
    });
    const res = await h.post(operation, routes[operation].example);
    expect([res.status, res.body.error.type, res.body.error.detail]).toEqual([
      404,
      `${DOCS}unkey/data/portal_not_found`,
      "The portal 'portal_1' does not exist.",
    ]);
  });

  it("revokeSession answers data/portal_session_not_found", async () => {
    const h = harness({
      portal: {
        revokeSession() {
          throw domainError(
            ErrorReason.PORTAL_SESSION_NOT_FOUND,
            "The portal session 'ps_1' does not exist.",
          );
        },
      },
    });
    const res = await h.post("portals.revokeSession", { sessionId: "ps_1" });
    expect([res.status, res.body.error.type]).toEqual([404, `${DOCS}unkey/data/portal_session_not_found`]);
  });

  it("createPortal answers 409 data/portal_already_exists for a taken slug", async () => {
    const h = harness({
      portal: {
        createPortal() {
          throw domainError(
            ErrorReason.PORTAL_ALREADY_EXISTS,
            "Another portal of the workspace has the slug 'acme'.",
          );
        },
      },
    });
    const res = await h.post("portals.createPortal", routes["portals.createPortal"].example);
    expect([res.status, res.body.error.type]).toEqual([409, `${DOCS}unkey/data/portal_already_exists`]);
  });
});
