import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { Component } from "./components.ts";

export const repoRoot = fileURLToPath(new URL("..", import.meta.url));

export interface Bundle {
  /** Absolute path of the written dist/<name>.mjs (undefined when nothing was written). */
  outfile: string | undefined;
  /** The repository's own source files that went into it, relative to the root (no node_modules). */
  sources: string[];
}

/**
 * Bundles one entrypoint, its workspace packages and its node_modules into one
 * ESM file that runs on plain Node (20, 22 or 24): the image then needs no node_modules,
 * no tsx and no TypeScript. With `outdir` undefined nothing is written and only
 * the list of sources comes back (the manifest test reads env names from it).
 */
export async function bundle(component: Component, outdir?: string): Promise<Bundle> {
  const outfile = outdir === undefined ? undefined : join(outdir, `${component.name}.mjs`);
  const result = await build({
    absWorkingDir: repoRoot,
    entryPoints: [component.entry],
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    outfile: outfile ?? join(repoRoot, "dist", `${component.name}.mjs`),
    write: outfile !== undefined,
    sourcemap: outfile === undefined ? false : "linked",
    keepNames: true,
    metafile: true,
    logLevel: "silent",
    // CommonJS dependencies (pino, nats) call require() and read __dirname,
    // which an ES module does not have: give them the real ones.
    banner: {
      js: [
        'import { createRequire as __latchkeyCreateRequire } from "node:module";',
        'import { fileURLToPath as __latchkeyFileURLToPath } from "node:url";',
        "const require = __latchkeyCreateRequire(import.meta.url);",
        "const __filename = __latchkeyFileURLToPath(import.meta.url);",
        'const __dirname = __latchkeyFileURLToPath(new URL(".", import.meta.url));',
      ].join("\n"),
    },
  });
  const sources = Object.keys(result.metafile.inputs)
    .filter((path) => !path.includes("node_modules/"))
    .map((path) => relative(repoRoot, join(repoRoot, path)))
    .sort();
  return { outfile, sources };
}
