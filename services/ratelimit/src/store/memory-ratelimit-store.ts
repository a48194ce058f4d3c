import { type AuditQuery, type AuditRecord, MemoryAuditLog, newId } from "@latchkey/runtime";
import type { Namespace, NamespacePage, Override, OverridePage, RatelimitStore } from "./ratelimit-store.ts";

/** The in-memory store of unit tests; behaves as PostgresRatelimitStore (see the contract suite). */
export class MemoryRatelimitStore implements RatelimitStore {
  private readonly namespaces = new Map<string, Namespace>();
  private readonly overrides = new Map<string, Override>();
  /** The audit records each override change writes with it (tests read them here). */
  readonly audit = new MemoryAuditLog();

  recordAudit(record: AuditRecord): Promise<void> {
    return this.audit.recordAudit(record);
  }

  listAudit(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]> {
    return this.audit.listAudit(workspaceId, query);
  }

  async namespaceById(workspaceId: string, id: string): Promise<Namespace | undefined> {
    const ns = this.namespaces.get(id);
    return ns?.workspaceId === workspaceId ? { ...ns } : undefined;
  }

  async namespaceByName(workspaceId: string, name: string): Promise<Namespace | undefined> {
    for (const ns of this.namespaces.values()) {
      if (ns.workspaceId === workspaceId && ns.name === name) return { ...ns };
    }
    return undefined;
  }

  async listNamespaces(
    workspaceId: string,
    page: { limit: number; after?: string; ids?: readonly string[] },
  ): Promise<NamespacePage> {
    const { after, ids } = page;
    const all = [...this.namespaces.values()]
      .filter(
        (ns) =>
          ns.workspaceId === workspaceId &&
          (after === undefined || ns.id > after) &&
          (ids === undefined || ids.includes(ns.id)),
      )
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const namespaces = all.slice(0, page.limit).map((ns) => ({ ...ns }));
    return all.length > page.limit ? { namespaces, next: namespaces.at(-1)!.id } : { namespaces };
  }

  async createNamespace(workspaceId: string, name: string): Promise<Namespace> {
    // No await before the insert: concurrent calls see each other's namespace, as the unique index makes them in SQL.
    for (const ns of this.namespaces.values()) {
      if (ns.workspaceId === workspaceId && ns.name === name) return { ...ns };
    }
    const ns = { id: newId("rlns"), workspaceId, name };
    this.namespaces.set(ns.id, ns);
    return { ...ns };
  }

  async setOverride(
    input: Omit<Override, "id">,
    audit?: (override: Override) => AuditRecord,
  ): Promise<Override> {
    const existing = this.find(input.namespaceId, input.identifier);
    const o = { ...input, id: existing?.id ?? newId("rlor") };
    this.overrides.set(o.id, o);
    this.audit.add(audit?.({ ...o }));
    return { ...o };
  }

  async getOverride(namespaceId: string, identifier: string): Promise<Override | undefined> {
    const o = this.find(namespaceId, identifier);
    return o && { ...o };
  }

  async listOverrides(namespaceId: string, page: { limit: number; after?: string }): Promise<OverridePage> {
    const after = page.after;
    const all = [...this.overrides.values()]
      .filter((o) => o.namespaceId === namespaceId && (after === undefined || o.id > after))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const overrides = all.slice(0, page.limit).map((o) => ({ ...o }));
    return all.length > page.limit ? { overrides, next: overrides.at(-1)!.id } : { overrides };
  }

  async allOverrides(namespaceId: string): Promise<Override[]> {
    return [...this.overrides.values()].filter((o) => o.namespaceId === namespaceId).map((o) => ({ ...o }));
  }

  async deleteOverride(namespaceId: string, identifier: string, audit?: AuditRecord): Promise<boolean> {
    const o = this.find(namespaceId, identifier);
    if (!o) return false;
    this.overrides.delete(o.id);
    this.audit.add(audit);
    return true;
  }

  async ping(): Promise<boolean> {
    return true;
  }

  private find(namespaceId: string, identifier: string): Override | undefined {
    for (const o of this.overrides.values()) {
      if (o.namespaceId === namespaceId && o.identifier === identifier) return o;
    }
    return undefined;
  }
}
