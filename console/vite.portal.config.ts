import { join } from "node:path";
import { defineConfig } from "vite";

// The portal web app (console/src/portal), a build of its own served at /portal/: its assets are under
// /portal/assets/ and it carries none of the console's code. Its URLs are relative (base "./", and the page
// calls ../v2/…), so it works where PUBLIC_URL has a path and a proxy strips it before Latchkey. The same rules as the console's build: hashed
// names, no source maps, nothing inlined into index.html (no inline script or style under the CSP).
export default defineConfig({
  root: join(import.meta.dirname, "src", "portal"),
  base: "./",
  publicDir: false,
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: join(import.meta.dirname, "dist", "portal"),
    emptyOutDir: true,
    sourcemap: false,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: "es2022",
    reportCompressedSize: false,
  },
});
