import { hash } from "node:crypto";
import { type Clock, domainError, ErrorReason, type Logger } from "@latchkey/runtime";
import type { ChainableCommander, Cluster, Redis } from "ioredis";
import type { Limiter } from "./limiter.ts";
import { counterRefusals, storeFailures } from "./metrics.ts";
import { SLIDING_WINDOWS_LUA } from "./redis-script.ts";
import {
  type CounterCheck,
  type CounterOutcome,
  DEFAULT_MAX_COUNTERS_PER_WORKSPACE,
} from "./sliding-windows.ts";

export interface RedisLimiterOptions {
  /** Put before every key (env RATELIMIT_REDIS_PREFIX), so several deployments or tests share one Redis. */
  prefix: string;
  /** Most live counters one workspace holds (env RATELIMIT_MAX_COUNTERS_PER_WORKSPACE). */
  maxCountersPerWorkspace?: number;
  /** The clock deciding the windows; omitted, Redis's own, so every replica sees the same windows. */
  clock?: Clock;
  /** Refusals (once a minute per workspace) and outages (once every few seconds). */
  log?: Logger;
}

/** The script as a command, on the client (answering its reply) or on a pipeline (answering the pipeline). */
type ScriptCommand<R> = {
  latchkeyRatelimit(numKeys: number, ...keysAndArgs: (string | number)[]): R;
};
type WithScript = (Redis | Cluster) & ScriptCommand<Promise<number[]>>;

const SEP = "\u001f";
/** After a workspace's tag, its set of live counters (no digest holds a ':', so no counter's key is this). */
const LIVE = ":live";
/** Characters of a counter's digest: 22 of base64url, 132 bits of SHA-256. */
export const DIGEST_LENGTH = 22;

/**
 * A counter's key in Redis: the workspace's hash tag, then a fixed-size digest
 * of the counter's id (workspace, namespace, identifier, duration), so that
 * what a counter costs Redis does not depend on how long its identifier is. A
 * cryptographic digest, so that no identifier can be made to share another's
 * counter.
 */
export const redisCounterKey = (prefix: string, check: Pick<CounterCheck, "key" | "duration">) =>
  `${prefix}{${workspaceOf(check.key)}}${counterDigest(check.key + SEP + check.duration)}`;

/** `id` is the counter's key and duration, as SlidingWindows names a counter. */
const counterDigest = (id: string) => hash("sha256", id, "base64url").slice(0, DIGEST_LENGTH);

const workspaceOf = (key: string) => {
  const at = key.indexOf(SEP);
  return at < 0 ? key : key.slice(0, at);
};

/**
 * What one counter costs Redis at most, in bytes (its hash, its TTL, its
 * member in the workspace's set), whatever its identifier: a workspace's bound
 * on counters times this is its bound on Redis memory. Measured with
 * bench/redis-memory.ts; the figures are in the README (Counters in Redis).
 */
export const REDIS_COUNTER_BYTES = 400;

/** The workspace's set of live counters (member: a counter's digest; score: when it ends). */
export const redisLiveSetKey = (prefix: string, workspace: string) => `${prefix}{${workspace}}${LIVE}`;
/** A workspace's refusals are logged at most this often; the metric counts each one. */
const LOG_REFUSALS_EVERY = 60_000;
/** An outage is logged at most this often: every failed check is counted in the metric. */
const LOG_FAILURES_EVERY = 10_000;
/** Refusal log times kept per workspace before the map is cleared (it only throttles logging). */
const MAX_LOGGED_WORKSPACES = 10_000;

/** One script call: the groups of one workspace, each counter's key once, the checks' arguments in order. */
interface Call {
  keys: string[];
  /** The prefix and the workspace's hash tag, which each counter's key starts with. */
  tag: string;
  /** Index in `keys` (1-based, as Lua's KEYS) of each counter id named so far. */
  index: Map<string, number>;
  args: (string | number)[];
  groups: number[];
  /** Checks the call carries, for the failure metric. */
  checks: number;
  /** Where in `args` the last group stands when it is a run of one check (-r), and that check. */
  run: number;
  last: CounterCheck | undefined;
}

/**
 * Counters in Redis or Valkey, shared by every replica: each call of `apply`
 * is one EVALSHA per workspace it names (redis-script.ts), sent together as
 * one pipeline, so a check, a multiLimit or a whole LimitBatch costs one
 * write and one round trip, and each counter's key is sent and read once per
 * call however many checks name it. Keys carry the workspace as their hash
 * tag (`prefix{workspace}…`), then a digest of the counter (redisCounterKey):
 * a workspace's counters never share a key with another's, on a Cluster they
 * live in one slot, which the script needs, and each costs Redis the same
 * bytes whatever identifier it counts.
 *
 * When Redis cannot answer (down, unreachable, past the command timeout set
 * on the client) a check fails fast with UNAVAILABLE rather than waiting: the
 * keys service then applies RATELIMIT_FAIL_OPEN to the verification, and a
 * standalone limit answers 503. A check whose answer was lost may still have
 * been counted: an outage can only overcount.
 */
export class RedisLimiter implements Limiter {
  private readonly redis: WithScript;
  private readonly cluster: boolean;
  private readonly bound: number;
  private readonly refusalsLogged = new Map<string, number>();
  private failureLogged = Number.NEGATIVE_INFINITY;

  constructor(
    redis: Redis | Cluster,
    private readonly options: RedisLimiterOptions,
  ) {
    if (!("latchkeyRatelimit" in redis)) {
      // EVALSHA, and EVAL once when the server does not have the script yet (after its restart too).
      redis.defineCommand("latchkeyRatelimit", { lua: SLIDING_WINDOWS_LUA });
    }
    this.redis = redis as WithScript;
    this.cluster = "isCluster" in redis && redis.isCluster === true;
    this.bound = options.maxCountersPerWorkspace ?? DEFAULT_MAX_COUNTERS_PER_WORKSPACE;
  }

  async apply(groups: readonly (readonly CounterCheck[])[]): Promise<CounterOutcome[][]> {
    const out: CounterOutcome[][] = new Array(groups.length);
    const calls = new Map<string, Call>();
    const now = this.options.clock === undefined ? -1 : this.options.clock.now();
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g]!;
      if (group.length === 0) {
        out[g] = [];
        continue;
      }
      // A group is one workspace's (a request, or one verification's named limits).
      const key0 = group[0]!.key;
      const at = key0.indexOf(SEP);
      const workspace = at < 0 ? key0 : key0.slice(0, at);
      let call = calls.get(workspace);
      if (call === undefined) {
        const tag = `${this.options.prefix}{${workspace}}`;
        call = {
          keys: [tag + LIVE],
          tag,
          index: new Map(),
          args: [now, this.bound],
          groups: [],
          checks: 0,
          run: -1,
          last: undefined,
        };
        calls.set(workspace, call);
      }
      call.groups.push(g);
      call.checks += group.length;
      // A coalesced batch of one hot identifier: the same lone check many times in a row travels once.
      const last = call.last;
      if (group.length === 1 && last !== undefined) {
        const c = group[0]!;
        if (
          c.key === last.key &&
          c.duration === last.duration &&
          c.limit === last.limit &&
          c.cost === last.cost
        ) {
          (call.args[call.run] as number)--;
          continue;
        }
      }
      if (group.length === 1) {
        call.run = call.args.length;
        call.last = group[0];
        call.args.push(-1);
      } else {
        call.last = undefined;
        call.args.push(group.length);
      }
      for (const c of group) {
        // Checked, not assumed: a key of another workspace would be written under this one's tag.
        if (
          c.key.length <= workspace.length ||
          !c.key.startsWith(workspace) ||
          c.key[workspace.length] !== SEP
        )
          throw new Error("a group of checks spans more than one workspace");
        // A coalesced batch names one hot counter many times: its key is made and travels once.
        const id = c.key + SEP + c.duration;
        let k = call.index.get(id);
        if (k === undefined) {
          call.keys.push(call.tag + counterDigest(id));
          k = call.keys.length;
          call.index.set(id, k);
        }
        call.args.push(k, c.limit, c.duration, c.cost);
      }
    }
    const sent = [...calls.values()];
    const replies = await this.send(sent);
    for (let i = 0; i < sent.length; i++) {
      const call = sent[i]!;
      const reply = replies[i]!;
      const now = reply[0]!;
      let r = 1;
      for (const g of call.groups) {
        const group = groups[g]!;
        const outcomes: CounterOutcome[] = new Array(group.length);
        for (let i = 0; i < group.length; i++) {
          const c = group[i]!;
          const code = reply[r++]!;
          const remaining = reply[r++]!;
          if (code === 2) this.refused(c.key, now);
          outcomes[i] = {
            success: code === 1,
            refused: code === 2,
            limit: c.limit,
            remaining,
            reset: (Math.floor(now / c.duration) + 1) * c.duration,
          };
        }
        out[g] = outcomes;
      }
    }
    return out;
  }

  async close(): Promise<void> {}

  /**
   * The script calls, one per workspace, and their answers in order. Several
   * travel as one pipeline: one write and one read for the whole batch, not
   * one per workspace. A Cluster keeps them apart, as a pipeline there must
   * stay within one slot and each workspace has its own.
   */
  private async send(calls: Call[]): Promise<number[][]> {
    if (calls.length === 0) return [];
    if (calls.length === 1) {
      const call = calls[0]!;
      return [
        await this.redis
          .latchkeyRatelimit(call.keys.length, ...call.keys, ...call.args)
          .catch((err: unknown) => this.unavailable(err, call.checks)),
      ];
    }
    if (this.cluster) {
      return Promise.all(
        calls.map((call) =>
          this.redis
            .latchkeyRatelimit(call.keys.length, ...call.keys, ...call.args)
            .catch((err: unknown) => this.unavailable(err, call.checks)),
        ),
      );
    }
    const pipeline = this.redis.pipeline() as ChainableCommander & ScriptCommand<ChainableCommander>;
    for (const call of calls) pipeline.latchkeyRatelimit(call.keys.length, ...call.keys, ...call.args);
    const checks = calls.reduce((sum, call) => sum + call.checks, 0);
    const results = await pipeline.exec().catch((err: unknown) => this.unavailable(err, checks));
    const replies: number[][] = new Array(calls.length);
    let failed: unknown;
    let lost = 0;
    for (let i = 0; i < calls.length; i++) {
      const [err, reply] = results?.[i] ?? [new Error("no answer in the pipeline")];
      if (err) {
        failed ??= err;
        lost += calls[i]!.checks;
      } else replies[i] = reply as number[];
    }
    if (failed !== undefined) this.unavailable(failed, lost);
    return replies;
  }

  private unavailable(err: unknown, checks: number): never {
    storeFailures.inc(checks);
    const now = Date.now();
    if (now - this.failureLogged >= LOG_FAILURES_EVERY) {
      this.failureLogged = now;
      this.options.log?.error({ err }, "ratelimit: Redis did not answer; checks fail until it does");
    }
    throw domainError(ErrorReason.UNAVAILABLE, "Rate limits could not be checked; retry shortly.");
  }

  private refused(key: string, now: number): void {
    counterRefusals.inc({ reason: "workspace" });
    const at = key.indexOf(SEP);
    const workspace = at < 0 ? key : key.slice(0, at);
    const last = this.refusalsLogged.get(workspace) ?? Number.NEGATIVE_INFINITY;
    if (now - last < LOG_REFUSALS_EVERY) return;
    if (this.refusalsLogged.size >= MAX_LOGGED_WORKSPACES) this.refusalsLogged.clear();
    this.refusalsLogged.set(workspace, now);
    this.options.log?.warn(
      { workspaceId: workspace, reason: "workspace", bound: this.bound },
      "ratelimit: no room for a new counter of this workspace; checks of its new identifiers are denied",
    );
  }
}
