import { chmodSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Pages, pagesFrom, servedApps } from "./pages.ts";

/** console/, the Vite project. */
export const consoleRoot = join(import.meta.dirname, "..");
/** Where `npm start` serves the console from. */
export const builtDir = join(consoleRoot, "dist");

/** The console's sources: a build older than any of them is built again. */
const SOURCES = ["src", "public", "index.html", "vite.config.ts", "vite.portal.config.ts", "package.json"];

/**
 * Builds the console into console/dist when it is missing or older than its sources, so that
 * `npm start` serves the console of its checkout with no separate build step. Built into a
 * directory of its own and renamed into place: several starts at once (the tests) never serve
 * a half-written build, and the last rename wins with a whole one.
 */
export async function ensureBuilt(into = builtDir): Promise<"built" | "current"> {
  if (isCurrent(into)) return "current";
  const out = mkdtempSync(join(consoleRoot, ".dist-"));
  try {
    await buildConsole(out);
    rmSync(into, { recursive: true, force: true });
    renameSync(out, into);
    chmodSync(into, 0o755);
  } catch (err) {
    // Another start renamed its build into place first: that one is served.
    if (!isCurrent(into)) throw err;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  return "built";
}

/**
 * Builds the console into `outDir` (emptied first): console/dist, or dist/console for the image; and the
 * portal web app into its portal/ folder, served at /portal/.
 */
export async function buildConsole(outDir: string): Promise<void> {
  // Imported here only: the gateway's bundle serves a build and never carries Vite.
  const { build } = await import("vite");
  await build({ configFile: join(consoleRoot, "vite.config.ts"), build: { outDir } });
  await build({
    configFile: join(consoleRoot, "vite.portal.config.ts"),
    build: { outDir: join(outDir, "portal") },
  });
}

function isCurrent(dir: string): boolean {
  const index = join(dir, "index.html");
  if (!existsSync(index)) return false;
  const builtAt = statSync(index).mtimeMs;
  return SOURCES.every((s) => newest(join(consoleRoot, s)) <= builtAt);
}

function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const e of readdirSync(path, { withFileTypes: true, recursive: true })) {
    latest = Math.max(latest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return latest;
}

/**
 * `npm start`'s console and portal web app: built first when needed (ensureBuilt), unless CONSOLE and
 * PORTAL_APP are both false.
 */
export async function builtConsolePages(): Promise<Pages | undefined> {
  const served = servedApps();
  if (!served.console && !served.portal) return undefined;
  await ensureBuilt();
  return pagesFrom(builtDir, served);
}
