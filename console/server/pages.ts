import { existsSync, readdirSync, readFileSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { env } from "@latchkey/runtime";

/** What the console's pages need of a request (the gateway's Exchange has it). */
export interface PageExchange {
  readonly method: string;
  reply(status: number, contentType: string, body: string, headers?: Readonly<Record<string, string>>): void;
}

/** Answers `x` when `path` is one of the console's files and the method GET or HEAD; else false. */
export type Pages = (x: PageExchange, path: string) => boolean;

/**
 * The console only talks to the API it was served by, loads nothing from elsewhere and runs no inline
 * script or style; uPlot styles its elements through the DOM, which style-src does not govern.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * The portal web app's (/portal/) is the console's but for images: a portal's logo is wherever its owner
 * keeps it, so any https image may load (an image runs no script). Nothing else differs: no inline script,
 * its own origin only for everything else.
 */
export const PORTAL_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace(
  "img-src 'self' data:",
  "img-src 'self' data: https:",
);

const common = (csp: string) => ({
  "content-security-policy": csp,
  "x-content-type-options": "nosniff",
  // The portal's address carries its single-use code until the page removes it: no referrer ever names it.
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
});
/** Vite names everything under assets/ by its content's hash: a changed file is a new name. */
const immutable = (csp: string) => ({
  ...common(csp),
  "cache-control": "public, max-age=31536000, immutable",
});
/** index.html names the current assets, so it is asked for again every time (revalidated). */
const revalidate = (csp: string) => ({ ...common(csp), "cache-control": "no-cache" });
const IMMUTABLE = immutable(CONTENT_SECURITY_POLICY);
const REVALIDATE = revalidate(CONTENT_SECURITY_POLICY);
const PORTAL_IMMUTABLE = immutable(PORTAL_CONTENT_SECURITY_POLICY);
const PORTAL_REVALIDATE = revalidate(PORTAL_CONTENT_SECURITY_POLICY);

/** Which of the build's two apps are served: the console at / and the portal web app at /portal/. */
export interface ServedApps {
  console: boolean;
  portal: boolean;
}

/** The console's files are text; a file of any other kind in the build is not served. */
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
};

interface Page {
  type: string;
  body: string;
  headers: Readonly<Record<string, string>>;
}

/**
 * The built console in `dir` (console/dist), read into memory once: it is a few files of some
 * hundred KiB, and a request for one costs a Map lookup. Undefined when `dir` holds no build.
 * The portal web app is its portal/ folder, served at /portal/ under its own policy.
 */
export function pagesFrom(
  dir: string,
  served: ServedApps = { console: true, portal: true },
): Pages | undefined {
  if (!existsSync(join(dir, "index.html"))) return undefined;
  const table = new Map<string, Page>();
  for (const file of filesUnder(dir)) {
    const type = TYPES[extname(file)];
    if (type === undefined) continue;
    const path = `/${relative(dir, file).split(sep).join("/")}`;
    const portal = path.startsWith("/portal/");
    if (!(portal ? served.portal : served.console)) continue;
    const headers = portal
      ? path.startsWith("/portal/assets/")
        ? PORTAL_IMMUTABLE
        : PORTAL_REVALIDATE
      : path.startsWith("/assets/")
        ? IMMUTABLE
        : REVALIDATE;
    table.set(path, { type, body: readFileSync(file, "utf8"), headers });
  }
  const index = table.get("/index.html");
  if (index) table.set("/", index);
  const portalIndex = table.get("/portal/index.html");
  // portal.createSession's URL is /portal/?code=…. Not /portal: the page names its files relative to its folder.
  if (portalIndex) table.set("/portal/", portalIndex);
  return (x, path) => {
    if (x.method !== "GET" && x.method !== "HEAD") return false;
    const page = table.get(path);
    if (page === undefined) return false;
    x.reply(200, page.type, page.body, page.headers);
    return true;
  };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/**
 * Where the built console is: dist/console beside the bundled gateway (deploy/build.ts puts it
 * there), or console/dist in a checkout.
 */
export function consoleDir(): string | undefined {
  const candidates = [join(import.meta.dirname, "console"), join(import.meta.dirname, "..", "dist")];
  return candidates.find((dir) => existsSync(join(dir, "index.html")));
}

/**
 * CONSOLE=false serves no console at /, PORTAL_APP=false no portal web app at /portal/ (for a deployment
 * whose PUBLIC_URL points at a portal page of its own).
 */
export function servedApps(): ServedApps {
  return { console: env.bool("CONSOLE", true), portal: env.bool("PORTAL_APP", true) };
}

/** The console the gateway serves at `/` and the portal web app at `/portal/`, as servedApps says, when built. */
export function consolePages(): Pages | undefined {
  const served = servedApps();
  if (!served.console && !served.portal) return undefined;
  const dir = consoleDir();
  return dir === undefined ? undefined : pagesFrom(dir, served);
}
