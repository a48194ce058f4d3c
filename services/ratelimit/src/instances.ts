import { randomBytes } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import { type Logger, loopProgress, type Sql } from "@latchkey/runtime";

/**
 * A process that counts rate limits in its own memory (RATELIMIT_STORE=memory
 * without RATELIMIT_PEERS) counts every budget alone: two of them behind one
 * load balancer would each let a key's whole limit through. So each such
 * process registers in `ratelimit_memory_instances` on its database, keeps its
 * row alive with a heartbeat, and removes it on a clean stop; a second one
 * refuses to start (UnsharedMemoryError) unless started with
 * RATELIMIT_ALLOW_UNSHARED_MEMORY=true. A row whose heartbeat stops (the
 * process crashed) expires: a restart waits until it shows a heartbeat (then
 * it is alive: refused) or expires (then it was not: taken over), or takes it
 * over at once when it names a process of this machine that no longer runs.
 * Processes whose counters are shared (Redis, peers) never register.
 */

/** Where a process counts, as the settings say (settings.ts storeFromEnv and RATELIMIT_PEERS). */
export interface Counting {
  store: "memory" | "redis";
  /** RATELIMIT_PEERS is set: the replicas share each budget. */
  peers?: boolean;
  /** RATELIMIT_ALLOW_UNSHARED_MEMORY: start beside another process counting in its own memory. */
  allowUnsharedMemory?: boolean;
}

export interface InstanceOptions {
  log: Logger;
  /** How often the row's heartbeat is written. */
  everyMs?: number;
  /** How long after its last heartbeat a row is taken for a stopped process. */
  ttlMs?: number;
  /** How often a start waiting on another row looks at it again. */
  pollMs?: number;
  /** Where this process runs (thisNode); tests set it to model processes on other machines. */
  node?: string;
}

export const HEARTBEAT_EVERY_MS = 5_000;
export const HEARTBEAT_TTL_MS = 15_000;
/** Refusals of a heartbeat that cannot be written, and of another instance seen meanwhile, are logged this often. */
const LOG_EVERY_MS = 60_000;

export class UnsharedMemoryError extends Error {
  constructor(other: InstanceRow, ttlMs: number) {
    super(
      `Another Latchkey process counts rate limits in its own memory on this database (host ${other.host}, pid ${other.pid}, ` +
        `started ${other.startedAt.toISOString()}): each would count every budget alone, so every limit would let ` +
        "through up to twice as much. Share the counters: set RATELIMIT_STORE=redis and REDIS_URL on every process " +
        "(the ratelimit service can use RATELIMIT_PEERS instead); or set RATELIMIT_ALLOW_UNSHARED_MEMORY=true to " +
        `start anyway. A process that stopped without a clean shutdown is forgotten ${Math.round(ttlMs / 1000)} s after its last heartbeat.`,
    );
    this.name = "UnsharedMemoryError";
  }
}

interface InstanceRow {
  id: string;
  host: string;
  pid: number;
  node: string;
  startedAt: Date;
  heartbeatAt: Date;
}

/**
 * This machine and process namespace (boot id and pid namespace): a row of
 * the same node names a pid that process.kill can look up. Empty where /proc
 * does not say (not Linux): such rows are only ever waited out.
 */
function thisNode(): string {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    return `${boot}/${readlinkSync("/proc/self/ns/pid")}`;
  } catch {
    return "";
  }
}

/**
 * Whether `pid`, of a row of this node, names no running process: this
 * process's own pid (then it was an earlier process's, which cannot run
 * while this one holds it), or none at all (ESRCH; a process of another
 * user, EPERM, runs).
 */
function gone(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/**
 * Registers this process when it counts in its own memory, waiting out a row
 * that may be a crashed process's; answers undefined when its counters are
 * shared. Throws UnsharedMemoryError when another such process is alive and
 * `counting.allowUnsharedMemory` is not set.
 */
export async function registerMemoryInstance(
  sql: Sql,
  counting: Counting,
  options: InstanceOptions,
): Promise<MemoryInstance | undefined> {
  if (counting.store !== "memory" || counting.peers) return undefined;
  const instance = new MemoryInstance(sql, counting.allowUnsharedMemory === true, options);
  await instance.register();
  return instance;
}

export class MemoryInstance {
  readonly id = `rli_${randomBytes(9).toString("base64url")}`;
  private readonly node: string;
  private readonly everyMs: number;
  private readonly ttlMs: number;
  private readonly pollMs: number;
  private readonly progress = loopProgress("ratelimit.instance_heartbeat");
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private stopped = false;
  private loggedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly sql: Sql,
    private readonly allowed: boolean,
    private readonly options: InstanceOptions,
  ) {
    this.everyMs = options.everyMs ?? HEARTBEAT_EVERY_MS;
    this.ttlMs = options.ttlMs ?? HEARTBEAT_TTL_MS;
    this.pollMs = options.pollMs ?? Math.min(1_000, this.everyMs / 4);
    this.node = options.node ?? thisNode();
  }

  /** The heartbeats written since the start, for tests. */
  get marks(): number {
    return this.progress.marks;
  }

  /**
   * Inserts this process's row once no other live row stands in the way (or
   * at once when allowed), then starts the heartbeat. A row seen first is
   * watched: a newer heartbeat proves it alive (refused); its expiry, or its
   * process gone from this machine, frees the way.
   */
  async register(): Promise<void> {
    const seen = new Map<string, number>();
    let waiting = false;
    for (;;) {
      const others = await this.tryInsert();
      if (others.length === 0) break;
      const alive = others.find((o) => {
        const before = seen.get(o.id);
        return before !== undefined && o.heartbeatAt.getTime() > before;
      });
      if (alive) throw new UnsharedMemoryError(alive, this.ttlMs);
      const stale = others.filter((o) => this.node !== "" && o.node === this.node && gone(o.pid));
      if (stale.length > 0) {
        await this
          .sql`DELETE FROM ratelimit_memory_instances WHERE id IN ${this.sql(stale.map((o) => o.id))}`;
        continue;
      }
      for (const o of others) if (!seen.has(o.id)) seen.set(o.id, o.heartbeatAt.getTime());
      if (!waiting) {
        waiting = true;
        this.options.log.warn(
          { others: others.map(({ host, pid }) => ({ host, pid })), waitMs: this.ttlMs },
          "ratelimit: another process may count rate limits in its own memory on this database; waiting for its heartbeat or its expiry",
        );
      }
      await new Promise((r) => setTimeout(r, this.pollMs));
    }
    this.timer = setInterval(() => {
      this.beating ??= this.beat().finally(() => {
        this.beating = undefined;
      });
    }, this.everyMs);
    this.timer.unref();
  }

  /**
   * In one transaction, under a lock that orders the starts: drops expired
   * rows, and inserts this process's row unless another (allowed or not)
   * lives and this one is not allowed. Answers the others that live.
   */
  private async tryInsert(): Promise<InstanceRow[]> {
    return this.sql.begin(async (tx) => {
      await tx`LOCK TABLE ratelimit_memory_instances IN SHARE ROW EXCLUSIVE MODE`;
      await tx`DELETE FROM ratelimit_memory_instances WHERE expires_at <= now()`;
      const others = await tx<InstanceRow[]>`
        SELECT id, host, pid, node, started_at AS "startedAt", heartbeat_at AS "heartbeatAt"
        FROM ratelimit_memory_instances WHERE id <> ${this.id}`;
      if (others.length === 0 || this.allowed) {
        await tx`
          INSERT INTO ratelimit_memory_instances (id, host, pid, node, allowed, expires_at)
          VALUES (${this.id}, ${hostname()}, ${process.pid}, ${this.node}, ${this.allowed},
                  now() + ${this.ttlMs} * interval '1 millisecond')`;
        if (others.length > 0) {
          this.options.log.warn(
            { others: others.map(({ host, pid }) => ({ host, pid })) },
            "ratelimit: RATELIMIT_ALLOW_UNSHARED_MEMORY=true: starting beside another process that counts rate limits in its own memory; each counts every budget alone",
          );
        }
        return [];
      }
      return others;
    }) as Promise<InstanceRow[]>;
  }

  /**
   * One heartbeat: moves the row's expiry on, puts it back if it lapsed (this
   * process was not heard from for a whole ttl and another took its place),
   * and says so when a process not allowed to lives beside another that was
   * not either (one started with RATELIMIT_ALLOW_UNSHARED_MEMORY said so itself).
   */
  private async beat(): Promise<void> {
    if (this.stopped) return;
    try {
      const [row] = await this.sql<{ mine: number; others: number }[]>`
        WITH beat AS (
          UPDATE ratelimit_memory_instances
          SET heartbeat_at = now(), expires_at = now() + ${this.ttlMs} * interval '1 millisecond'
          WHERE id = ${this.id} RETURNING 1)
        SELECT (SELECT count(*) FROM beat)::int AS mine,
               (SELECT count(*) FROM ratelimit_memory_instances
                WHERE id <> ${this.id} AND expires_at > now() AND NOT allowed)::int AS others`;
      if (row!.mine === 0) {
        await this.sql`
          INSERT INTO ratelimit_memory_instances (id, host, pid, node, allowed, expires_at)
          VALUES (${this.id}, ${hostname()}, ${process.pid}, ${this.node}, ${this.allowed},
                  now() + ${this.ttlMs} * interval '1 millisecond')
          ON CONFLICT (id) DO NOTHING`;
      }
      this.progress.mark();
      if ((row!.mine === 0 || row!.others > 0) && !this.allowed) {
        this.throttled((log) =>
          log.error(
            { instanceId: this.id, lapsed: row!.mine === 0, others: row!.others },
            "ratelimit: another process counts rate limits in its own memory on this database; each counts every budget alone, so limits let through more than they say (use RATELIMIT_STORE=redis)",
          ),
        );
      }
    } catch (err) {
      this.throttled((log) =>
        log.warn({ err }, "ratelimit: the heartbeat of this process's registration could not be written"),
      );
    }
  }

  private throttled(write: (log: Logger) => void): void {
    const now = Date.now();
    if (now - this.loggedAt < LOG_EVERY_MS) return;
    this.loggedAt = now;
    write(this.options.log);
  }

  /** Stops the heartbeat and removes the row, so that a restart is not kept waiting. */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.beating;
    // A stop goes on without it: the row then expires on its own.
    await this.sql`DELETE FROM ratelimit_memory_instances WHERE id = ${this.id}`.catch((err: unknown) =>
      this.options.log.warn(
        { err },
        "ratelimit: this process's registration could not be removed; it expires",
      ),
    );
  }
}
