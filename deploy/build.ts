import { copyFileSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildConsole } from "../console/server/build.ts";
import { SCALAR_FILE, scalarBundle } from "../gateway/src/api-reference.ts";
import { bundle, repoRoot } from "./bundle.ts";
import { components } from "./components.ts";

// `npm run build`: dist/<component>.mjs for every component, as the image runs them, and the web console
// in dist/console, which the gateway serves at / (console/server/pages.ts finds it beside its bundle).
const outdir = join(repoRoot, "dist");
rmSync(outdir, { recursive: true, force: true });

const missing = components.filter((c) => !existsSync(join(repoRoot, c.entry)));
if (missing.length > 0) {
  console.error(`cannot build: no entrypoint ${missing.map((c) => c.entry).join(", ")}`);
  process.exit(1);
}
for (const component of components) {
  const { outfile } = await bundle(component, outdir);
  process.stdout.write(`${component.name}: ${outfile}\n`);
}
// The API reference's browser bundle, which the gateway serves at /docs/scalar.js: the image has no node_modules.
copyFileSync(scalarBundle(), join(outdir, SCALAR_FILE));
await buildConsole(join(outdir, "console"));
process.stdout.write(`console: ${join(outdir, "console")}\n`);
