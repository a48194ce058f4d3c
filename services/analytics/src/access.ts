import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  domainError,
  ErrorReason,
  grantedIds,
  holds,
  need,
  normalizePermission,
  requirePermissions,
} from "@latchkey/runtime";

/**
 * The APIs a caller may read analytics of: undefined for every API of the
 * workspace (api.*.read_analytics), else the ones named by
 * api.<apiId>.read_analytics. Asking for one API the caller may not read is
 * refused with the permission it lacks, the same answer whether or not the API
 * exists, so nothing leaks.
 */
export function readableApis(caller: Caller | undefined, apiId: string | undefined): string[] | undefined {
  const permissions = caller?.permissions ?? [];
  if (apiId !== undefined) {
    requirePermissions(caller, [need("api", apiId, "read_analytics")]);
    return [apiId];
  }
  if (holds(permissions, need("api", "*", "read_analytics"))) return undefined;
  const apis = new Set<string>();
  for (const p of permissions) {
    const [resource, id, action] = normalizePermission(p).split(".");
    if (
      (resource === "api" || resource === "*") &&
      id &&
      id !== "*" &&
      (action === "read_analytics" || action === "*")
    ) {
      apis.add(id);
    }
  }
  if (apis.size === 0) {
    throw domainError(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      "The root key lacks the permission 'api.*.read_analytics' (or 'api.<apiId>.read_analytics').",
    );
  }
  return [...apis].sort();
}

/**
 * The namespaces a caller may read rate-limit analytics of, as readableApis
 * does for APIs: undefined for every namespace of the workspace
 * (ratelimit.*.read_analytics), else the ones named by
 * ratelimit.<namespaceId>.read_analytics.
 */
export function readableNamespaces(
  caller: Caller | undefined,
  namespaceId: string | undefined,
): string[] | undefined {
  if (namespaceId !== undefined) {
    requirePermissions(caller, [need("ratelimit", namespaceId, "read_analytics")]);
    return [namespaceId];
  }
  const namespaces = grantedIds(caller?.permissions ?? [], "ratelimit", "read_analytics");
  if (namespaces?.length === 0) {
    throw domainError(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      "The root key lacks the permission 'ratelimit.*.read_analytics' (or 'ratelimit.<namespaceId>.read_analytics').",
    );
  }
  return namespaces;
}
