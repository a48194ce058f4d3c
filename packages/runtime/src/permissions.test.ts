import { describe, expect, it } from "vitest";
import { ErrorReason, errorDetailOf } from "./errors.ts";
import { grants, holds, requirePermissions, rootPermissionProblem } from "./permissions.ts";

describe("root-key permissions", () => {
  it("lets * grant everything", () => {
    expect(grants("*", "api.api_1.verify_key")).toBe(true);
    expect(grants("*", "ratelimit.*.limit")).toBe(true);
  });

  it("lets a * segment stand for any one id", () => {
    expect(grants("api.*.verify_key", "api.api_1.verify_key")).toBe(true);
    expect(grants("api.*.verify_key", "api.api_1.read_key")).toBe(false);
    expect(grants("api.api_1.verify_key", "api.api_2.verify_key")).toBe(false);
    expect(grants("api.api_1.verify_key", "api.*.verify_key")).toBe(false);
  });

  it("accepts Latchkey's apis. spelling as an alias of api.", () => {
    expect(grants("apis.*.create_key", "api.api_1.create_key")).toBe(true);
    expect(holds(["apis.api_1.read_key"], "api.api_1.read_key")).toBe(true);
  });

  it("answers INSUFFICIENT_PERMISSIONS naming what is missing", () => {
    const caller = { workspaceId: "ws_1", rootKeyId: "rk_1", permissions: ["api.*.read_key"] };
    expect(() => requirePermissions(caller as never, ["api.*.read_key"])).not.toThrow();
    try {
      requirePermissions(caller as never, ["api.*.read_key", "api.*.read_api"]);
      expect.unreachable();
    } catch (err) {
      expect(errorDetailOf(err)?.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
      expect((err as Error).message).toContain("'api.*.read_api'");
    }
  });

  it("refuses malformed permission names with a reason", () => {
    expect(rootPermissionProblem("api.*.verify_key")).toBeUndefined();
    expect(rootPermissionProblem("*")).toBeUndefined();
    expect(rootPermissionProblem("api.verify_key")).toMatch(/resource.id.action/);
    expect(rootPermissionProblem("api.*.fly")).toMatch(/unknown action 'fly'/);
    expect(rootPermissionProblem("audit.*.read")).toBeUndefined();
    expect(rootPermissionProblem("audit.*.write")).toMatch(/unknown action 'write' for audit/);
    expect(rootPermissionProblem("apis.*.create_key")).toBeUndefined();
  });
});
