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

const COMMON = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
};
/** Vite names everything under assets/ by its content's hash: a changed file is a new name. */
const IMMUTABLE = { ...COMMON, "cache-control": "public, max-age=31536000, immutable" };
/** index.html names the current assets, so it is asked for again every time (revalidated). */
const REVALIDATE = { ...COMMON, "cache-control": "no-cache" };

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
 */
export function pagesFrom(dir: string): Pages | undefined {
  if (!existsSync(join(dir, "index.html"))) return undefined;
  const table = new Map<string, Page>();
  for (const file of filesUnder(dir)) {
    const type = TYPES[extname(file)];
    if (type === undefined) continue;
    const path = `/${relative(dir, file).split(sep).join("/")}`;
    const headers = path.startsWith("/assets/") ? IMMUTABLE : REVALIDATE;
    table.set(path, { type, body: readFileSync(file, "utf8"), headers });
  }
  table.set("/", table.get("/index.html")!);
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

/** The console the gateway serves at `/`, unless CONSOLE is false or no build is there. */
export function consolePages(): Pages | undefined {
  if (!env.bool("CONSOLE", true)) return undefined;
  const dir = consoleDir();
  return dir === undefined ? undefined : pagesFrom(dir);
}
