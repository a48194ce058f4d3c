import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "./logger.ts";

/**
 * Fire-and-forget messages between instances, used to invalidate caches the
 * moment something changes. In one process it is a plain in-memory bus; across
 * processes it is core NATS.
 */
export interface Bus {
  publish(subject: string, data: Uint8Array): void;
  /**
   * Resolves once what was published so far has reached the other instances' server, so a
   * change answered after it is seen by the next request on any instance (a NATS round trip;
   * never rejects: a bus that is away delivers on reconnect, and caches' TTLs bound the rest).
   */
  flushed(): Promise<void>;
  subscribe(subject: string, handler: (data: Uint8Array) => void): () => void;
  close(): Promise<void>;
}

export class MemoryBus implements Bus {
  private handlers = new Map<string, Set<(data: Uint8Array) => void>>();

  publish(subject: string, data: Uint8Array): void {
    for (const h of this.handlers.get(subject) ?? []) h(data);
  }

  /** Handlers ran in publish(): nothing is in flight. */
  flushed(): Promise<void> {
    return Promise.resolve();
  }

  subscribe(subject: string, handler: (data: Uint8Array) => void): () => void {
    const set = this.handlers.get(subject) ?? new Set();
    this.handlers.set(subject, set);
    set.add(handler);
    return () => set.delete(handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}

/**
 * A NATS connection as Latchkey's processes keep them: it reconnects forever, every half second,
 * once it has connected (the first connection is the caller's to wait for: bootstrap.ts's until).
 */
export function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
}

export class NatsBus implements Bus {
  private constructor(
    readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {}

  static async connect(url: string, log: Logger, name: string): Promise<NatsBus> {
    return new NatsBus(await connectNats(url, name), log);
  }

  publish(subject: string, data: Uint8Array): void {
    try {
      this.nc.publish(subject, data);
    } catch (err) {
      this.log.warn({ err, subject }, "bus publish failed");
    }
  }

  flushed(): Promise<void> {
    return this.nc.flush().catch((err: unknown) => this.log.warn({ err }, "bus flush failed"));
  }

  subscribe(subject: string, handler: (data: Uint8Array) => void): () => void {
    const sub = this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) this.log.warn({ err, subject }, "bus subscription error");
        else handler(msg.data);
      },
    });
    return () => sub.unsubscribe();
  }

  async close(): Promise<void> {
    await this.nc.drain().catch(() => this.nc.close());
  }
}
