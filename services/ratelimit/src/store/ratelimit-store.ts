import type { AuditLogStore, AuditRecord } from "@latchkey/runtime";

/** A rate-limit namespace of one workspace, created on first use. */
export interface Namespace {
  id: string;
  workspaceId: string;
  name: string;
}

/** Replaces limit and duration for identifiers matching `identifier` (which may contain `*`). */
export interface Override {
  id: string;
  namespaceId: string;
  identifier: string;
  limit: number;
  duration: number;
}

export interface NamespacePage {
  namespaces: Namespace[];
  /** Set when another page exists: the id to continue after. */
  next?: string;
}

export interface OverridePage {
  overrides: Override[];
  /** Set when another page exists: the id to continue after. */
  next?: string;
}

/**
 * Namespaces and overrides. Counters are not stored: they live in memory (see limiter/). An
 * override's change takes its audit record and writes it in the change's own transaction, only
 * when the change is made (packages/runtime/src/audit.ts).
 */
export interface RatelimitStore extends AuditLogStore {
  namespaceById(workspaceId: string, id: string): Promise<Namespace | undefined>;
  namespaceByName(workspaceId: string, name: string): Promise<Namespace | undefined>;
  /**
   * The workspace's namespaces ordered by id, after `after`, at most `limit`;
   * only those of `ids` when given (the ones the caller may read).
   */
  listNamespaces(
    workspaceId: string,
    page: { limit: number; after?: string; ids?: readonly string[] },
  ): Promise<NamespacePage>;
  /** Creates the namespace, or answers the one a concurrent call created with the same name. */
  createNamespace(workspaceId: string, name: string): Promise<Namespace>;

  /** Inserts, or updates limit and duration keeping the id of the override with the same identifier. */
  setOverride(input: Omit<Override, "id">, audit?: (override: Override) => AuditRecord): Promise<Override>;
  getOverride(namespaceId: string, identifier: string): Promise<Override | undefined>;
  /** Ordered by id; `after` is the previous page's `next`. */
  listOverrides(namespaceId: string, page: { limit: number; after?: string }): Promise<OverridePage>;
  /** Every override of a namespace, for the matcher. */
  allOverrides(namespaceId: string): Promise<Override[]>;
  /** True when there was one to delete. */
  deleteOverride(namespaceId: string, identifier: string, audit?: AuditRecord): Promise<boolean>;

  /** True when the storage answers (readiness). */
  ping(): Promise<boolean>;
}
