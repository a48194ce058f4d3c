import type { AuditRecord } from "@latchkey/runtime";

/** A stored forward-auth policy (forward_auth_policies.proto). */
export interface PolicyRecord {
  id: string;
  workspaceId: string;
  name: string;
  /** From 0 in match order; the default has none. */
  position: number | null;
  isDefault: boolean;
  /** The policy file's entry as JSON text. */
  definitionJson: string;
  createdAt: number;
  updatedAt: number;
}

export type NewPolicy = Omit<PolicyRecord, "position" | "updatedAt">;

/** Why a change was not made: the name or the default is taken, or the workspace holds its most. */
export type PolicyRefusal = "name taken" | "default taken" | "full";

/**
 * A workspace's forward-auth policies, in match order. Every change keeps positions dense (0..n-1)
 * and is serialized per workspace, so concurrent changes neither leave gaps nor pass `max`.
 */
export interface PolicyStore {
  /** Inserts at `position` (clamped to the end; ignored for the default), moving later ones down. */
  create(
    policy: NewPolicy,
    position: number | undefined,
    max: number,
    audit?: AuditRecord,
  ): Promise<PolicyRecord | PolicyRefusal>;
  find(workspaceId: string, id: string): Promise<PolicyRecord | undefined>;
  /** In match order, the default last; `after` is a position (the default sorts after every one). */
  list(workspaceId: string, after: number | undefined, limit: number): Promise<PolicyRecord[]>;
  /** Replaces the definition and/or moves the policy (clamped to the end); undefined when missing. */
  update(
    workspaceId: string,
    id: string,
    change: { name?: string; definitionJson?: string; position?: number },
    at: number,
    audit?: AuditRecord,
  ): Promise<PolicyRecord | "name taken" | undefined>;
  /** Deletes it, closing the gap; false when missing. */
  delete(workspaceId: string, id: string, audit?: AuditRecord): Promise<boolean>;
}

/** Every list's order: by position, the default (null) last. */
export function byMatchOrder(a: PolicyRecord, b: PolicyRecord): number {
  return (a.position ?? Number.MAX_SAFE_INTEGER) - (b.position ?? Number.MAX_SAFE_INTEGER);
}
