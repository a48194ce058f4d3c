import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "./in-memory-gateway.ts";

type Body = Record<string, unknown>;
type Case = [Body, string, string];

/**
 * The six operations that add, remove or set a key's permissions or roles
 * answer alike: they differ only in the list they take, its limits, and
 * whether an empty list is allowed (set: it clears) or not (add, remove).
 * Their 400, 200 and 404 tests are these suites.
 */
type KeyListOperation = `keys.${"add" | "remove" | "set"}${"Permissions" | "Roles"}`;
type KeyListMethod =
  | "addPermissions"
  | "removePermissions"
  | "setPermissions"
  | "addRoles"
  | "removeRoles"
  | "setRoles";

function shapeOf(operation: KeyListOperation) {
  const method = operation.slice("keys.".length) as KeyListMethod;
  const permissions = method.endsWith("Permissions");
  return {
    method,
    permissions,
    field: permissions ? ("permissions" as const) : ("roles" as const),
    empty: !method.startsWith("set"),
  };
}

export function describeKeyList400(operation: KeyListOperation): void {
  const { method, permissions, field, empty } = shapeOf(operation);

  describe(`POST /v2/${operation} answering 400`, () => {
    let called = 0;
    const h = harness({
      keys: {
        [method]() {
          called++;
          return permissions ? { permissions: [] } : { roles: [] };
        },
      },
    });

    const cases: Case[] = permissions
      ? [
          [{ permissions: ["documents.read"] }, "/body/keyId", "keyId is required."],
          [{ keyId: "key_1" }, "/body/permissions", "permissions is required."],
          [{ keyId: "key_1", permissions: null }, "/body/permissions", "permissions must be an array."],
          [
            { keyId: "key_1", permissions: "documents.read" },
            "/body/permissions",
            "permissions must be an array.",
          ],
          ...(empty
            ? ([
                [
                  { keyId: "key_1", permissions: [] },
                  "/body/permissions",
                  "permissions must hold at least 1 item.",
                ],
              ] as Case[])
            : []),
          [
            { keyId: "key_1", permissions: Array(1001).fill("p") },
            "/body/permissions",
            "permissions must hold at most 1000 items.",
          ],
          [
            { keyId: "key_1", permissions: [""] },
            "/body/permissions/0",
            "permissions[0] must be at least 1 character long.",
          ],
          [
            { keyId: "key_1", permissions: ["p".repeat(129)] },
            "/body/permissions/0",
            "permissions[0] must be at most 128 characters long.",
          ],
          [
            { keyId: "key_1", permissions: ["ok", "a b"] },
            "/body/permissions/1",
            "permissions[1] must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
          ],
          [
            { keyId: "key_1", permissions: [null] },
            "/body/permissions/0",
            "permissions[0] must be a string.",
          ],
          [{ keyId: null, permissions: ["p"] }, "/body/keyId", "keyId must be a string."],
          [
            { keyId: "key_1", permissions: ["p"], roles: [] },
            "/body/roles",
            "roles is not a field of this operation.",
          ],
        ]
      : [
          [{ roles: ["admin"] }, "/body/keyId", "keyId is required."],
          [{ keyId: "key_1" }, "/body/roles", "roles is required."],
          [{ keyId: "key_1", roles: null }, "/body/roles", "roles must be an array."],
          ...(empty
            ? ([[{ keyId: "key_1", roles: [] }, "/body/roles", "roles must hold at least 1 item."]] as Case[])
            : []),
          [
            { keyId: "key_1", roles: Array(101).fill("r") },
            "/body/roles",
            "roles must hold at most 100 items.",
          ],
          [{ keyId: "key_1", roles: [""] }, "/body/roles/0", "roles[0] must be at least 1 character long."],
          [
            { keyId: "key_1", roles: ["ok", "r".repeat(129)] },
            "/body/roles/1",
            "roles[1] must be at most 128 characters long.",
          ],
          [{ keyId: "key_1", roles: [7] }, "/body/roles/0", "roles[0] must be a string."],
          [{ keyId: "k", roles: ["admin"] }, "/body/keyId", "keyId must be at least 3 characters long."],
          [
            { keyId: "key_1", roles: ["admin"], permissions: [] },
            "/body/permissions",
            "permissions is not a field of this operation.",
          ],
        ];

    it.each(cases)("refuses %j at %s", async (body, location, message) => {
      const res = await h.post(operation, body);
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
      expect(called).toBe(0);
    });

    const most = permissions ? 1000 : 100;
    it(`accepts 128 characters and ${most} ${field === "permissions" ? "slugs" : "roles"}`, async () => {
      const res = await h.post(operation, {
        keyId: "key_1",
        [field]: ["x".repeat(128), ...Array(most - 1).fill("y")],
      });
      expect(res.status).toBe(200);
      expect(called).toBe(1);
    });
  });
}

/** A permission as the keys service answers it and as the operation answers it: description only when set. */
const PERMISSIONS = [
  { id: "perm_1", name: "documents.read", slug: "documents.read", description: "Read documents" },
  { id: "perm_2", name: "documents.write", slug: "documents.write" },
];
const ROLES = [
  {
    id: "role_1",
    name: "admin",
    description: "Everything",
    permissions: [{ id: "perm_1", name: "Read", slug: "documents.read", description: "Read documents" }],
  },
  { id: "role_2", name: "viewer", permissions: [] },
];

export function describeKeyList200(operation: KeyListOperation): void {
  const { method, permissions, field, empty } = shapeOf(operation);
  const what = permissions ? "direct permissions" : "roles";
  const answer = (list: unknown[]) => (permissions ? { permissions: list } : { roles: list });

  describe(`POST /v2/${operation} answering 200`, () => {
    it(
      permissions
        ? "answers the key's direct permissions as the array data, description only when set"
        : "answers the key's roles as the array data, each with its permissions and a description only when set",
      async () => {
        const seen: Record<string, unknown>[] = [];
        const h = harness({
          keys: {
            [method](req: Record<string, unknown>) {
              seen.push(req);
              return answer(permissions ? PERMISSIONS : ROLES);
            },
          },
        });
        const sent = permissions ? ["documents.read", "documents.*"] : ["admin", "viewer"];
        const res = await h.post(operation, { keyId: "key_1", [field]: sent });
        expect(res.status).toBe(200);
        expect(res.body.data).toEqual(permissions ? PERMISSIONS : ROLES);
        expect(seen.map((r) => [r["keyId"], r[field]])).toEqual([["key_1", sent]]);
      },
    );

    it(`answers data [] when the key has no ${what} left`, async () => {
      const h = harness({ keys: { [method]: () => answer([]) } });
      const res = await h.post(operation, {
        keyId: "key_1",
        [field]: [permissions ? "documents.read" : "admin"],
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
    });

    if (!empty) {
      it(`sends an empty list, which clears the key's ${what}`, async () => {
        const seen: Record<string, unknown>[] = [];
        const h = harness({
          keys: {
            [method](req: Record<string, unknown>) {
              seen.push(req);
              return answer([]);
            },
          },
        });
        const res = await h.post(operation, { keyId: "key_1", [field]: [] });
        expect(res.status).toBe(200);
        expect(res.body.data).toEqual([]);
        expect(seen.map((r) => r[field])).toEqual([[]]);
      });
    }
  });
}

export function describeKeyList404(operation: KeyListOperation): void {
  const { method, permissions, field } = shapeOf(operation);
  const failing = (reason: ErrorReason, message: string) =>
    harness({
      keys: {
        [method]() {
          throw domainError(reason, message);
        },
      },
    });

  describe(`POST /v2/${operation} answering 404`, () => {
    it("answers data/key_not_found", async () => {
      const h = failing(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
      const res = await h.post(operation, {
        keyId: "key_gone",
        [field]: [permissions ? "documents.read" : "admin"],
      });
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual({
        title: "Not Found",
        detail: "The specified key was not found.",
        status: 404,
        type: `${DOCS}unkey/data/key_not_found`,
      });
    });

    // The role operations also answer 404 for a role name that does not exist (removeRoles too).
    if (!permissions) {
      it("answers data/role_not_found naming the first role that does not exist", async () => {
        const h = failing(ErrorReason.ROLE_NOT_FOUND, "Role 'auditor' was not found.");
        const res = await h.post(operation, { keyId: "key_1", roles: ["admin", "auditor"] });
        expect(res.status).toBe(404);
        expect(res.body.error.type).toBe(`${DOCS}unkey/data/role_not_found`);
        expect(res.body.error.detail).toBe("Role 'auditor' was not found.");
      });
    }
  });
}
