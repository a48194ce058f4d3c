import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { domainError, ErrorReason, holds, need } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import type { Namespace, RatelimitStore } from "./store/ratelimit-store.ts";

export const NAMESPACE_ID_PREFIX = "rlns_";

/**
 * Namespaces by workspace and by name or id. Namespaces are never renamed or
 * deleted, so a found one is kept (up to `max` entries, by id and by name, the
 * least recently used leaving first); a missing one is looked up again next
 * time, since it may have been created meanwhile.
 */
export class NamespaceCache {
  private readonly found: LRUCache<string, Namespace>;
  private readonly loading = new Map<string, Promise<Namespace | undefined>>();

  constructor(
    private readonly store: RatelimitStore,
    max = 100_000,
  ) {
    this.found = new LRUCache({ max });
  }

  /** The namespace when cached: lets a check go without awaiting. */
  peek(workspaceId: string, ref: string): Namespace | undefined {
    return this.found.get(workspaceId + "\u001f" + ref);
  }

  /** `ref` is a namespace id (rlns_…) or a name; ids are never taken for names. */
  find(workspaceId: string, ref: string): Promise<Namespace | undefined> {
    const key = workspaceId + "\u001f" + ref;
    const hit = this.found.get(key);
    if (hit) return Promise.resolve(hit);
    const inFlight = this.loading.get(key);
    if (inFlight) return inFlight;
    const load = (
      ref.startsWith(NAMESPACE_ID_PREFIX)
        ? this.store.namespaceById(workspaceId, ref)
        : this.store.namespaceByName(workspaceId, ref)
    ).then(
      (ns) => {
        this.loading.delete(key);
        if (ns) this.remember(ns);
        return ns;
      },
      (err) => {
        this.loading.delete(key);
        throw err;
      },
    );
    this.loading.set(key, load);
    return load;
  }

  async create(workspaceId: string, name: string): Promise<Namespace> {
    const ns = await this.store.createNamespace(workspaceId, name);
    this.remember(ns);
    return ns;
  }

  private remember(ns: Namespace): void {
    // Two entries, by id and by name, each used (and dropped) on its own.
    this.found.set(ns.workspaceId + "\u001f" + ns.id, ns);
    this.found.set(ns.workspaceId + "\u001f" + ns.name, ns);
  }
}

/** ratelimit.<id>.<action> or ratelimit.*.<action>. */
export const mayOnNamespace = (caller: Caller, namespaceId: string, action: string) =>
  holds(caller.permissions, need("ratelimit", namespaceId, action));

/**
 * The one answer to a caller that may not act on a namespace. It reads the
 * same whether the namespace exists or not, so a root key cannot learn which
 * namespaces another part of its workspace uses.
 */
export const namespaceForbidden = (action: string) =>
  domainError(
    ErrorReason.INSUFFICIENT_PERMISSIONS,
    `The root key lacks the permission 'ratelimit.*.${action}' (or 'ratelimit.<namespaceId>.${action}' for this namespace).`,
  );

/**
 * The caller's namespace `ref` when the caller may `action` on it. A missing
 * namespace answers NAMESPACE_NOT_FOUND only to a caller who could act on any
 * namespace; everyone else gets the same 403 as for an existing one.
 */
export async function authorizedNamespace(
  namespaces: NamespaceCache,
  caller: Caller,
  ref: string,
  action: string,
): Promise<Namespace> {
  const ns = namespaces.peek(caller.workspaceId, ref) ?? (await namespaces.find(caller.workspaceId, ref));
  if (!ns) {
    if (!mayOnNamespace(caller, "*", action)) throw namespaceForbidden(action);
    throw domainError(ErrorReason.NAMESPACE_NOT_FOUND, `The namespace '${ref}' does not exist.`);
  }
  if (!mayOnNamespace(caller, ns.id, action)) throw namespaceForbidden(action);
  return ns;
}
