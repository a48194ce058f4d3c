import type { IdentityChanged } from "@latchkey/proto/identity/v1/events_pb";
import type { Bus, Clock, Logger, LoopProgress } from "@latchkey/runtime";
import { loopProgress, onIdentityChanged } from "@latchkey/runtime";
import { keyChanged } from "./events.ts";
import type { DeletedGrant, KeysStore } from "./store/keys-store.ts";
import type { KeyCache } from "./verify/key-cache.ts";

/** Above this many changed keys, one message drops the workspace's cached keys instead of one per key. */
const MAX_KEY_MESSAGES = 1_000;

/**
 * Removals under way at once, each a statement over one workspace's keys:
 * one workspace's at a time, and this many in all, so a workspace deleting
 * roles by the thousand takes one of the pool's connections, not all of them.
 */
export const MAX_REMOVALS_AT_ONCE = 2;

/**
 * Deleting a role or a permission takes it off every key, as Unkey does.
 * Keys name their roles and direct permissions, so without this a role
 * deleted and created again under the same name would silently grant again
 * to the keys that had the old one.
 *
 * Every keys instance hears the identity service's IdentityChanged (deleted);
 * the store applies each deletion once, keyed by the role's or permission's
 * id, so whichever instance comes first takes the name off the workspace's
 * keys in one statement and the others change nothing (a name given back to a
 * key in between stays). That instance then announces the changed keys, so
 * every instance drops them from its key cache.
 *
 * Should the message be missed (bus down) or the statement fail, verification
 * still grants nothing through a role or permission that does not exist
 * (identity-cache.ts); only a later re-creation under the same name would
 * grant again to keys still naming it, the remaining gap.
 */
export class DeletedGrants {
  private readonly pending = new Set<Promise<void>>();
  /** Deletions waiting, per workspace, in the order heard; the Map's order is the order they are served in. */
  private readonly queued = new Map<string, DeletedGrant[]>();
  /** Workspaces with a removal under way. */
  private readonly busy = new Set<string>();
  private readonly unsubscribe: () => void;
  private readonly idle: NodeJS.Timeout;
  private readonly progress: LoopProgress;

  constructor(
    private readonly deps: {
      store: Pick<KeysStore, "removeDeletedGrant">;
      bus: Bus;
      keyCache: KeyCache;
      clock: Clock;
      log: Logger;
      progress?: LoopProgress;
    },
  ) {
    this.unsubscribe = onIdentityChanged(deps.bus, (change) => {
      const deleted = deletedGrantOf(change);
      if (!deleted) return;
      const queue = this.queued.get(deleted.workspaceId);
      if (queue === undefined) this.queued.set(deleted.workspaceId, [deleted]);
      else queue.push(deleted);
      this.start();
    });
    this.progress = deps.progress ?? loopProgress("keys.deleted-grants");
    // Each removal finished is a unit of progress; with none waiting it says so once a second.
    this.idle = setInterval(() => {
      if (this.busy.size === 0 && this.queued.size === 0) this.progress.mark();
    }, 1_000);
    this.idle.unref();
  }

  /** Starts the next removal of each workspace in turn that has none under way, while slots are free. */
  private start(): void {
    for (const [workspaceId, queue] of this.queued) {
      if (this.busy.size >= MAX_REMOVALS_AT_ONCE) return;
      if (this.busy.has(workspaceId)) continue;
      const deleted = queue.shift()!;
      // Served: to the back of the order, or gone when nothing else waits.
      this.queued.delete(workspaceId);
      if (queue.length > 0) this.queued.set(workspaceId, queue);
      this.busy.add(workspaceId);
      const done = this.remove(deleted).finally(() => {
        this.pending.delete(done);
        this.busy.delete(workspaceId);
        this.progress.mark();
        this.start();
      });
      this.pending.add(done);
    }
  }

  /** Deletions heard and not yet applied, in all. */
  get waiting(): number {
    let n = 0;
    for (const queue of this.queued.values()) n += queue.length;
    return n + this.busy.size;
  }

  /** Takes the deleted role or permission off the workspace's keys, unless an instance already did. */
  async remove(deleted: DeletedGrant): Promise<void> {
    try {
      const hashes = await this.deps.store.removeDeletedGrant(deleted, this.deps.clock.now());
      if (hashes === undefined || hashes.length === 0) return;
      if (hashes.length > MAX_KEY_MESSAGES) {
        await keyChanged(this.deps, { workspaceId: deleted.workspaceId });
      } else {
        await Promise.all(
          hashes.map((hash) => keyChanged(this.deps, { workspaceId: deleted.workspaceId, hash })),
        );
      }
      this.deps.log.info({ ...deleted, keys: hashes.length }, "deleted role or permission taken off keys");
    } catch (err) {
      this.deps.log.error({ err, ...deleted }, "a deleted role or permission could not be taken off keys");
    }
  }

  /** Resolves once every removal heard so far has finished. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }

  /** Stops listening and waits for removals under way. */
  async close(): Promise<void> {
    this.unsubscribe();
    clearInterval(this.idle);
    await this.settled();
  }
}

/** The role or permission an IdentityChanged says was deleted; undefined for anything else. */
export function deletedGrantOf(change: IdentityChanged): DeletedGrant | undefined {
  if (!change.deleted || change.workspaceId === "") return undefined;
  if (change.roleId !== "" && change.roleName !== "") {
    return { id: change.roleId, workspaceId: change.workspaceId, list: "roles", name: change.roleName };
  }
  if (change.permissionId !== "" && change.permissionSlug !== "") {
    return {
      id: change.permissionId,
      workspaceId: change.workspaceId,
      list: "permissions",
      name: change.permissionSlug,
    };
  }
  return undefined;
}
