import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { openApiDocument, openApiJson } from "./openapi.ts";

/**
 * What the gateway serves beside the API: /openapi.json, /openapi.yaml and the interactive
 * reference at /docs (Scalar's standalone bundle, from node_modules: no CDN, works offline). Each
 * is built on its first request and kept, so it costs nothing before and nothing per verification.
 */

export interface Page {
  readonly type: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The reference loads only what the gateway serves: its script, this document and inline styles
 * (Scalar's themes set them); no fonts or scripts from elsewhere, no frames.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Latchkey API reference</title>
  </head>
  <body>
    <div id="app"></div>
    <script src="/docs/scalar.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;

// Everything that would reach Scalar's own services is off: its fonts (a CDN), telemetry, the
// AI agent and MCP generation; the reference then runs offline.
const INIT = `Scalar.createApiReference("#app", {
  url: "/openapi.json",
  withDefaultFonts: false,
  hideClientButton: true,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  defaultOpenAllTags: false,
});
`;

const pages = new Map<string, Page>();

const builders: Record<string, () => Page> = {
  "/openapi.json": () => ({ type: "application/json", body: openApiJson(), headers: {} }),
  "/openapi.yaml": () => ({ type: "application/yaml", body: stringify(openApiDocument()), headers: {} }),
  "/docs": () => ({
    type: "text/html; charset=utf-8",
    body: HTML,
    headers: { "content-security-policy": CSP },
  }),
  "/docs/init.js": () => ({ type: "text/javascript", body: INIT, headers: {} }),
  "/docs/scalar.js": () => ({
    type: "text/javascript",
    body: readFileSync(scalarBundle(), "utf8"),
    headers: {},
  }),
};

/** The name of Scalar's bundle beside the gateway's own in dist/ (deploy/build.ts copies it there). */
export const SCALAR_FILE = "scalar-standalone.js";

/**
 * Scalar's browser bundle: from node_modules, or, in the image (no node_modules), beside the bundled
 * gateway. The package exports no path to it; it sits beside the package's entry point.
 */
export function scalarBundle(): string {
  try {
    const entry = createRequire(import.meta.url).resolve("@scalar/api-reference");
    return join(dirname(entry), "browser/standalone.js");
  } catch {
    return fileURLToPath(new URL(`./${SCALAR_FILE}`, import.meta.url));
  }
}

/** The paths served here, GET or HEAD only. */
export const REFERENCE_PATHS: ReadonlySet<string> = new Set(Object.keys(builders));

/** The page at `path` (one of REFERENCE_PATHS), built once; throws when Scalar's bundle is not installed. */
export function referencePage(path: string): Page {
  let page = pages.get(path);
  if (page === undefined) {
    page = builders[path]!();
    pages.set(path, page);
  }
  return page;
}
