import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { domainError, ErrorReason } from "./errors.ts";

/**
 * Root-key permissions have the form resource.id.action. A held "*" grants
 * everything; a "*" segment in a held permission matches any one segment, so
 * "api.*.verify_key" covers "api.api_123.verify_key". The contract's plural
 * "apis." is accepted as an alias of Unkey's "api.".
 */
export function normalizePermission(permission: string): string {
  return permission.startsWith("apis.") ? `api.${permission.slice(5)}` : permission;
}

export function grants(held: string, wanted: string): boolean {
  const h = normalizePermission(held);
  if (h === "*") return true;
  const w = normalizePermission(wanted);
  if (h === w) return true;
  const hs = h.split(".");
  const ws = w.split(".");
  if (hs.length !== ws.length) return false;
  for (let i = 0; i < hs.length; i++) {
    if (hs[i] !== "*" && hs[i] !== ws[i]) return false;
  }
  return true;
}

export function holds(permissions: readonly string[], wanted: string): boolean {
  for (const p of permissions) if (grants(p, wanted)) return true;
  return false;
}

/** True when the caller holds every one of `all`. */
export function holdsAll(permissions: readonly string[], all: readonly string[]): boolean {
  return all.every((w) => holds(permissions, w));
}

/** The permission an operation needs on one resource, e.g. need("api", apiId, "read_key"). */
export const need = (resource: string, id: string, action: string) => `${resource}.${id}.${action}`;

/**
 * The ids of `resource` on which the permissions grant `action`: undefined
 * when they grant it on every one (resource.*.action, or a wider wildcard),
 * else the ids named one by one (possibly none), sorted. What a list
 * operation or an analytics query is restricted to.
 */
export function grantedIds(
  permissions: readonly string[],
  resource: string,
  action: string,
): string[] | undefined {
  if (holds(permissions, need(resource, "*", action))) return undefined;
  const ids = new Set<string>();
  for (const p of permissions) {
    const [r, id, a] = normalizePermission(p).split(".");
    if ((r === resource || r === "*") && id && id !== "*" && (a === action || a === "*")) ids.add(id);
  }
  return [...ids].sort();
}

/** Throws INSUFFICIENT_PERMISSIONS naming what is missing unless the caller holds every permission. */
/** The caller the gateway resolved from the root key, on an RPC request; a request without one was not authenticated. */
export function authenticatedCaller(req: { caller?: Caller | undefined }): Caller {
  const caller = req.caller;
  if (!caller || caller.workspaceId === "") {
    throw domainError(ErrorReason.UNAUTHENTICATED, "The request carries no authenticated caller.");
  }
  return caller;
}

export function requirePermissions(caller: Caller | undefined, all: readonly string[]): void {
  const missing = all.filter((w) => !holds(caller?.permissions ?? [], w));
  if (missing.length > 0) {
    throw domainError(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      `The root key lacks the permission${missing.length > 1 ? "s" : ""} ${missing.map((m) => `'${m}'`).join(", ")}.`,
    );
  }
}

/** Every permission name a root key may hold; anything else is refused when a root key is created. */
export const ROOT_KEY_ACTIONS = {
  api: [
    "read_api",
    "create_api",
    "delete_api",
    "update_api",
    "create_key",
    "update_key",
    "delete_key",
    "encrypt_key",
    "decrypt_key",
    "read_key",
    "verify_key",
    "read_analytics",
  ],
  ratelimit: [
    "limit",
    "create_namespace",
    "read_namespace",
    "update_namespace",
    "delete_namespace",
    "set_override",
    "read_override",
    "delete_override",
    "list_overrides",
    "read_analytics",
  ],
  rbac: [
    "create_permission",
    "update_permission",
    "delete_permission",
    "read_permission",
    "create_role",
    "update_role",
    "delete_role",
    "read_role",
    "add_permission_to_key",
    "remove_permission_from_key",
    "add_role_to_key",
    "remove_role_from_key",
    "add_permission_to_role",
    "remove_permission_from_role",
  ],
  identity: ["create_identity", "read_identity", "update_identity", "delete_identity"],
  webhook: ["create", "read", "update", "delete"],
  /** The end-user portal (docs/portal.md); create_portal_session as Unkey's portal.createSession names it. */
  portal: [
    "create_portal",
    "read_portal",
    "update_portal",
    "delete_portal",
    "create_portal_session",
    "revoke_portal_session",
  ],
  /** auditLogs.list: the workspace's record of management changes (packages/runtime/src/audit.ts). */
  audit: ["read"],
  /**
   * A reverse proxy asking the gateway's forward-auth endpoint, per policy name (docs/edge.md); the
   * policies' management (forwardAuth.*Policy) as forward_auth.*.<action>.
   */
  forward_auth: ["verify", "create_policy", "read_policy", "update_policy", "delete_policy"],
} as const;

/** Why a root-key permission string is not valid, or undefined when it is. */
export function rootPermissionProblem(permission: string): string | undefined {
  const p = normalizePermission(permission);
  if (p === "*") return undefined;
  const parts = p.split(".");
  if (parts.length !== 3 || parts.some((s) => s.length === 0)) {
    return `'${permission}' is not of the form resource.id.action (for example api.*.verify_key) or *`;
  }
  const [resource, , action] = parts as [string, string, string];
  const actions = (ROOT_KEY_ACTIONS as Record<string, readonly string[]>)[resource];
  if (!actions)
    return `'${permission}': unknown resource '${resource}' (one of ${Object.keys(ROOT_KEY_ACTIONS).join(", ")})`;
  if (action !== "*" && !actions.includes(action)) {
    return `'${permission}': unknown action '${action}' for ${resource} (one of ${actions.join(", ")}, or *)`;
  }
  return undefined;
}
