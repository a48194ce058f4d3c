import { defineConfig } from "vite";

// The console is built into console/dist: hashed names under assets/ (served immutable), no source maps,
// nothing inlined into index.html (the Content-Security-Policy allows no inline script or style).
export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  publicDir: "public",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: "es2022",
    reportCompressedSize: false,
  },
});
