import { runService } from "@latchkey/runtime";
import { createPortalDeps } from "./deps.ts";
import { portalMigrations } from "./migrations.ts";
import { portalRoutes } from "./routes.ts";
import { portalSettingsFromEnv } from "./settings.ts";

// The portal service as its own process: it serves PortalService and acts on keys only through the
// keys and analytics services. runService reads and connects what its row of
// packages/runtime/src/contexts.ts names; the settings below are its own.
await runService("portal", {
  migrations: portalMigrations,
  settings: () => ({ portal: portalSettingsFromEnv() }),
  async start(s, ctx) {
    const { log, sql } = ctx;
    const deps = createPortalDeps({
      sql,
      keys: ctx.transport("keys"),
      analytics: ctx.transport("analytics"),
      settings: s.portal,
      log,
    });
    return {
      routes: portalRoutes(deps),
      ready: async () => {
        await sql`SELECT 1`;
        return true;
      },
    };
  },
});
