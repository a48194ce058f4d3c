import { create } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import {
  ApplyRequestSchema,
  CounterUndoSchema,
  RatelimitPeerService,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { Batcher, type Logger } from "@latchkey/runtime";
import type { Limiter } from "./limiter.ts";
import { Rendezvous } from "./rendezvous.ts";
import type { CounterCheck, CounterOutcome, SlidingWindows } from "./sliding-windows.ts";
import { fromGroupResult, toCounter, toGroup } from "./wire.ts";

export interface PeerConfig {
  /** This replica's base URL, exactly as it appears in `peers`. */
  self: string;
  /** Base URLs of every replica, this one included (env RATELIMIT_PEERS). */
  peers: string[];
  /** The transport to another replica: main.ts's internalTransport, which signs each call as every replica requires. */
  transport?: (baseUrl: string) => Transport;
}

interface Peer {
  client: Client<typeof RatelimitPeerService>;
  batcher: Batcher<readonly CounterCheck[], CounterOutcome[]>;
}

/**
 * Several replicas, one budget: every counter (workspace, namespace,
 * identifier) is owned by one replica chosen by rendezvous hashing over the
 * same peer list, and only its owner counts it, in memory, exactly as one
 * replica would. A replica counts the checks it owns in place and forwards the
 * others to their owner, coalesced into one RatelimitPeerService.Apply call per
 * peer whenever none is in flight.
 *
 * An all-or-nothing group whose counters have different owners is counted
 * part by part; when a part fails, the parts that passed are given back. In
 * between, those parts count against their limits for the length of one
 * round trip: this can deny a request that would have passed, never admit one
 * that should not.
 *
 * When a peer cannot be reached, its checks are counted here instead (logged):
 * the limit then holds per replica until it is back, rather than failing
 * every request.
 */
export class PeerLimiter implements Limiter {
  private readonly ring: Rendezvous;
  private readonly remotes = new Map<string, Peer>();

  constructor(
    private readonly config: PeerConfig,
    private readonly windows: SlidingWindows,
    private readonly log: Logger,
    transport: ((baseUrl: string) => Transport) | undefined = config.transport,
  ) {
    if (!config.peers.includes(config.self)) {
      throw new Error(
        `RATELIMIT_SELF '${config.self}' is not one of RATELIMIT_PEERS (${config.peers.join(", ")})`,
      );
    }
    this.ring = new Rendezvous(config.peers);
    for (const url of config.peers) {
      if (url === config.self) continue;
      if (transport === undefined)
        throw new Error("PeerConfig.transport is required with more than one replica");
      const client = createClient(RatelimitPeerService, transport(url));
      const batcher = new Batcher<readonly CounterCheck[], CounterOutcome[]>(
        async (groups) => {
          const res = await client.apply({
            $typeName: "ratelimit.v1.ApplyRequest",
            groups: groups.map(toGroup),
            undo: [],
          });
          return res.groups.map(fromGroupResult);
        },
        { maxBatch: 512, maxInFlight: 2 },
      );
      this.remotes.set(url, { client, batcher });
    }
  }

  owner(key: string): string {
    return this.ring.owner(key);
  }

  apply(groups: readonly (readonly CounterCheck[])[]): Promise<CounterOutcome[][]> {
    // A peer list of this replica alone (the base deployment) owns every counter: no hashing.
    if (this.remotes.size === 0) return Promise.resolve(groups.map((g) => this.windows.apply(g)));
    // Groups owned here are counted now, before any await, so no other check interleaves;
    // a batch that is all local (keys this replica owns) makes no promise per group.
    const self = this.config.self;
    const out: (CounterOutcome[] | Promise<CounterOutcome[]>)[] = new Array(groups.length);
    let waiting = false;
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i]!;
      const owner = this.groupOwner(g);
      if (owner === self) out[i] = this.windows.apply(g);
      else {
        out[i] = owner === undefined ? this.applyGroup(g) : this.applyAt(owner, g);
        waiting = true;
      }
    }
    return waiting ? Promise.all(out) : Promise.resolve(out as CounterOutcome[][]);
  }

  /** The one replica owning every counter of the group, or undefined when they have several. */
  private groupOwner(group: readonly CounterCheck[]): string | undefined {
    if (group.length === 0) return this.config.self;
    const owner = this.ring.owner(group[0]!.key);
    for (let i = 1; i < group.length; i++) if (this.ring.owner(group[i]!.key) !== owner) return undefined;
    return owner;
  }

  async close(): Promise<void> {}

  private async applyGroup(group: readonly CounterCheck[]): Promise<CounterOutcome[]> {
    const parts = new Map<string, number[]>();
    for (let i = 0; i < group.length; i++) {
      const owner = this.ring.owner(group[i]!.key);
      const part = parts.get(owner);
      if (part) part.push(i);
      else parts.set(owner, [i]);
    }
    if (parts.size <= 1) return this.applyAt(parts.keys().next().value ?? this.config.self, group);

    const entries = [...parts];
    const answers = await Promise.all(
      entries.map(([owner, idx]) =>
        this.applyAt(
          owner,
          idx.map((i) => group[i]!),
        ),
      ),
    );
    const out: CounterOutcome[] = new Array(group.length);
    let passed = true;
    entries.forEach(([, idx], p) => {
      idx.forEach((i, j) => {
        out[i] = answers[p]![j]!;
        if (!out[i]!.success) passed = false;
      });
    });
    if (!passed) {
      entries.forEach(([owner, idx], p) => {
        if (answers[p]!.every((o) => o.success)) {
          this.undoAt(
            owner,
            idx.map((i, j) => ({ check: group[i]!, reset: answers[p]![j]!.reset })),
          );
        }
      });
    }
    return out;
  }

  private applyAt(owner: string, group: readonly CounterCheck[]): Promise<CounterOutcome[]> {
    const remote = this.remotes.get(owner);
    if (!remote) return Promise.resolve(this.windows.apply(group));
    return remote.batcher.call(group).catch((err) => {
      this.log.warn({ err, peer: owner }, "ratelimit peer unreachable: counting its checks here");
      return this.windows.apply(group);
    });
  }

  private undoAt(owner: string, counted: { check: CounterCheck; reset: number }[]): void {
    const remote = this.remotes.get(owner);
    if (!remote) {
      for (const { check, reset } of counted) this.windows.undo(check, reset);
      return;
    }
    const undo = counted
      .filter(({ check }) => check.cost > 0)
      .map(({ check, reset }) =>
        create(CounterUndoSchema, { counter: toCounter(check), reset: BigInt(reset) }),
      );
    if (undo.length === 0) return;
    remote.client.apply(create(ApplyRequestSchema, { undo })).catch((err) => {
      this.log.warn({ err, peer: owner }, "ratelimit peer unreachable: could not give back a partial count");
    });
  }
}
