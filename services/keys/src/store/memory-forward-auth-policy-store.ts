import type { AuditRecord, MemoryAuditLog } from "@latchkey/runtime";
import {
  byMatchOrder,
  type NewPolicy,
  type PolicyRecord,
  type PolicyRefusal,
  type PolicyStore,
} from "./forward-auth-policy-store.ts";

/** The policy store in memory (unit tests), writing its audit records into the keys store's log. */
export class MemoryPolicyStore implements PolicyStore {
  private readonly byWorkspace = new Map<string, PolicyRecord[]>();

  constructor(private readonly audit: MemoryAuditLog) {}

  private of(workspaceId: string): PolicyRecord[] {
    let list = this.byWorkspace.get(workspaceId);
    if (list === undefined) {
      list = [];
      this.byWorkspace.set(workspaceId, list);
    }
    return list;
  }

  /** Gives the ordinary policies positions 0..n-1 in the order they stand. */
  private renumber(list: PolicyRecord[]): void {
    list.sort(byMatchOrder);
    let i = 0;
    for (const p of list) if (!p.isDefault) p.position = i++;
  }

  async create(
    policy: NewPolicy,
    position: number | undefined,
    max: number,
    audit?: AuditRecord,
  ): Promise<PolicyRecord | PolicyRefusal> {
    const list = this.of(policy.workspaceId);
    if (list.length >= max) return "full";
    if (list.some((p) => p.name === policy.name)) return "name taken";
    if (policy.isDefault && list.some((p) => p.isDefault)) return "default taken";
    const ordinary = list.filter((p) => !p.isDefault).length;
    const at = policy.isDefault ? null : Math.min(position ?? ordinary, ordinary);
    if (at !== null) for (const p of list) if (p.position !== null && p.position >= at) p.position++;
    const record: PolicyRecord = { ...policy, position: at, updatedAt: policy.createdAt };
    list.push(record);
    this.renumber(list);
    this.audit.add(audit);
    return { ...record };
  }

  async find(workspaceId: string, id: string): Promise<PolicyRecord | undefined> {
    const p = this.of(workspaceId).find((r) => r.id === id);
    return p && { ...p };
  }

  async list(workspaceId: string, after: number | undefined, limit: number): Promise<PolicyRecord[]> {
    return [...this.of(workspaceId)]
      .sort(byMatchOrder)
      .filter((p) => after === undefined || p.position === null || p.position > after)
      .slice(0, limit)
      .map((p) => ({ ...p }));
  }

  async update(
    workspaceId: string,
    id: string,
    change: { name?: string; definitionJson?: string; position?: number },
    at: number,
    audit?: AuditRecord,
  ): Promise<PolicyRecord | "name taken" | undefined> {
    const list = this.of(workspaceId);
    const p = list.find((r) => r.id === id);
    if (p === undefined) return undefined;
    if (change.name !== undefined && list.some((r) => r.id !== id && r.name === change.name)) {
      return "name taken";
    }
    if (change.name !== undefined) p.name = change.name;
    if (change.definitionJson !== undefined) p.definitionJson = change.definitionJson;
    if (change.position !== undefined && !p.isDefault) {
      const others = list.filter((r) => r !== p && !r.isDefault).sort(byMatchOrder);
      others.splice(Math.min(change.position, others.length), 0, p);
      others.forEach((r, i) => {
        r.position = i;
      });
    }
    p.updatedAt = at;
    this.audit.add(audit);
    return { ...p };
  }

  async delete(workspaceId: string, id: string, audit?: AuditRecord): Promise<boolean> {
    const list = this.of(workspaceId);
    const i = list.findIndex((r) => r.id === id);
    if (i === -1) return false;
    list.splice(i, 1);
    this.renumber(list);
    this.audit.add(audit);
    return true;
  }
}
