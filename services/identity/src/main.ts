import { runService } from "@latchkey/runtime";
import { createIdentityDeps } from "./deps.ts";
import { identityMigrations } from "./migrations.ts";
import { identityRoutes } from "./routes.ts";

// The identity service as its own process: its settings and dependencies are its row of
// packages/runtime/src/contexts.ts, connected by runService.
await runService("identity", {
  migrations: identityMigrations,
  async start(_, ctx) {
    // Without NATS, changes reach only this process: fine for one replica, stale caches elsewhere otherwise.
    if (!ctx.nats) ctx.log.warn("NATS_URL is not set: identity changes are not announced to other processes");
    // identity.created and identity.deleted (events.domain) reach the webhooks through JetStream.
    const events = ctx.events();
    const deps = createIdentityDeps({
      sql: ctx.sql,
      bus: ctx.bus,
      log: ctx.log,
      ...(events ? { events } : {}),
    });
    return { routes: identityRoutes(deps) };
  },
});
