import type { Transport } from "@connectrpc/connect";
import type { WireCodecs } from "@latchkey/proto/codecs/wire/codec";
import type { NatsConnection } from "@nats-io/transport-node";
import { AuditPruner } from "./audit.ts";
import { rpcUnavailable, runProcess, type Starting } from "./bootstrap.ts";
import { type Bus, connectNats, MemoryBus, NatsBus } from "./bus.ts";
import { env } from "./config.ts";
import { CONTEXTS, type ContextName, contextSettings, readSetting } from "./contexts.ts";
import { connect, type Migration, migrate, type Sql } from "./db.ts";
import { ensureEventsStream, JetStreamEventSink } from "./events.ts";
import { InternalAuth } from "./internal-auth.ts";
import { createLogger, type Logger } from "./logger.ts";
import { type Routes, serveRpc } from "./serve.ts";
import { internalTransport } from "./transport.ts";

/** What a context's start is handed: its dependencies, connected, and what it needs to serve. */
export interface ServiceStarting extends Starting {
  /** Signs the calls it makes; the calls it serves are checked against it. */
  readonly auth: InternalAuth;
  /** Its PostgreSQL pool, migrated (contexts whose row in contexts.ts says `postgres`; otherwise it throws). */
  readonly sql: Sql;
  /** DATABASE_URL, for pools of its own. */
  readonly databaseUrl: string;
  /** NATS when NATS_URL is set (the events stream exists then), else undefined. */
  readonly nats: NatsBus | undefined;
  /** The bus over NATS, or one in this process without it. */
  readonly bus: Bus;
  /** The JetStream sink of its events (made at the first call, flushed at stop), or undefined without NATS. */
  events(): JetStreamEventSink | undefined;
  /**
   * A NATS connection of its own, for a JetStream consumer: a consumer catching up on a backlog
   * then cannot hold up the bus or the JetStream API requests of the shared connection. Closed at stop.
   */
  natsConnection(purpose: string): Promise<NatsConnection>;
  /** A transport to a context it calls (its row's `calls`), at the URL its setting names. */
  transport(to: ContextName, options?: { timeoutMs?: number; codecs?: WireCodecs }): Transport;
}

/** What a context serves once started. */
export interface ServiceParts {
  routes: Routes;
  /** Answers /readyz. Default: PostgreSQL answers (for contexts with tables), else ready. */
  ready?: () => Promise<boolean>;
  /** Hand-written codecs of its hot methods (serveRpc). */
  codecs?: WireCodecs;
  /** Fields added to its "listening" log line. */
  about?: Record<string, unknown>;
}

export interface ServiceSpec<S> {
  /** Its PostgreSQL migrations, applied at start under its name (contexts with tables). */
  migrations?: readonly Migration[];
  /** Reads and checks its own settings (with the config helpers); runs before anything listens or connects. */
  settings?(log: Logger): S;
  /** Builds the context on its connected dependencies, each further one through `ctx.until`. */
  start(settings: S, ctx: ServiceStarting): Promise<ServiceParts>;
}

/**
 * A context's process (services/<name>/src/main.ts): the settings contexts.ts gives it (PORT,
 * DATABASE_URL, NATS_URL, AUDIT_RETENTION_DAYS, the URLs of the contexts it calls) and LOG_LEVEL
 * and LATCHKEY_INTERNAL_SECRET, read and checked with its own before anything listens; then it
 * listens (runProcess: alive, not ready, every RPC answered UNAVAILABLE) while it waits for
 * PostgreSQL and its migrations, NATS and the events stream; builds what `spec.start` builds and
 * serves it with serveRpc, which takes the port over. Each step's closing is registered as it
 * opens, so a stop closes them in reverse.
 */
export function runService<S = undefined>(name: ContextName, spec: ServiceSpec<S>): Promise<void> {
  const context = CONTEXTS[name];
  const log = createLogger(name, env.string("LOG_LEVEL", "info"));
  const label = `${name} service`;
  return runProcess({
    name: label,
    log,
    answers: { metrics: true, unavailable: rpcUnavailable },
    settings() {
      const auth = InternalAuth.fromEnv();
      const read = new Map(contextSettings(name).map((s) => [s.name, readSetting(s)]));
      const own = spec.settings ? spec.settings(log) : (undefined as S);
      return {
        port: read.get("PORT") as number,
        host: "0.0.0.0",
        auth,
        databaseUrl: read.get("DATABASE_URL") as string | undefined,
        natsUrl: read.get("NATS_URL") as string | undefined,
        auditRetentionDays: read.get("AUDIT_RETENTION_DAYS") as number | undefined,
        urls: new Map(context.calls.map((c) => [c, read.get(CONTEXTS[c].urlSetting) as string])),
        own,
      };
    },
    async start(s, boot) {
      let sql: Sql | undefined;
      if (s.databaseUrl !== undefined) {
        const pool = connect(s.databaseUrl);
        sql = pool;
        boot.onStop(() => pool.end({ timeout: 5 }));
        await boot.until("PostgreSQL", () => migrate(pool, name, spec.migrations ?? []));
        if (context.auditTable && s.auditRetentionDays !== undefined) {
          const pruner = new AuditPruner(pool, context.auditTable, {
            retentionDays: s.auditRetentionDays,
            log,
          }).start();
          boot.onStop(() => pruner.stop());
        }
      }
      let nats: NatsBus | undefined;
      if (s.natsUrl) {
        const url = s.natsUrl;
        nats = await boot.until("NATS", () => NatsBus.connect(url, log, name));
        const bus = nats;
        boot.onStop(() => bus.close());
        await boot.until("JetStream", () => ensureEventsStream(bus.nc));
      }
      const bus: Bus = nats ?? new MemoryBus();
      let sink: JetStreamEventSink | undefined;
      const ctx: ServiceStarting = {
        ...boot,
        auth: s.auth,
        get sql(): Sql {
          if (sql === undefined) throw new Error(`${name} keeps no tables in PostgreSQL`);
          return sql;
        },
        databaseUrl: s.databaseUrl ?? "",
        nats,
        bus,
        events() {
          if (nats === undefined) return undefined;
          if (sink === undefined) {
            const made = new JetStreamEventSink(nats.nc, log);
            sink = made;
            boot.onStop(async () => {
              await made.flush(5_000);
              made.close();
            });
          }
          return sink;
        },
        async natsConnection(purpose) {
          const url = s.natsUrl;
          if (!url) throw new Error(`${name} has no NATS_URL`);
          const nc = await boot.until("NATS", () => connectNats(url, `${name}-${purpose}`));
          boot.onStop(() => nc.drain().catch(() => nc.close()));
          return nc;
        },
        transport(to, options = {}) {
          const url = s.urls.get(to);
          if (url === undefined) throw new Error(`${name} does not call ${to} (contexts.ts)`);
          return internalTransport(url, { auth: s.auth, ...options });
        },
      };
      const parts = await spec.start(s.own, ctx);
      const ready =
        parts.ready ??
        (sql
          ? async () => {
              await sql`SELECT 1`;
              return true;
            }
          : async () => true);
      const server = await serveRpc(parts.routes, boot.port, { ready }, s.host, {
        auth: s.auth,
        ...(parts.codecs ? { codecs: parts.codecs } : {}),
      });
      boot.onStop(() => server.close());
      log.info({ port: server.port, ...parts.about }, `${label} listening`);
    },
  });
}
