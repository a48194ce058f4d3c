import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { basename, dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Comments and docs point readers at files: a file renamed or deleted leaves them pointing at nothing. Every
// file a comment, a markdown text or a script's comment names (by path, or by a name some file of the
// repository has) must exist.

const root = fileURLToPath(new URL("../..", import.meta.url));
const tracked = execFileSync("git", ["ls-files"], { cwd: root, encoding: "utf8" })
  .split("\n")
  .filter(Boolean);
const paths = new Set(tracked);
const names = new Set(tracked.map((f) => basename(f)));

/** A file name with one of these endings, optionally behind folders; a glob's star or a leading dot excludes it. */
const CITED = /(?<![\w@./$*-])((?:[\w.-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|tsx|md|sh|yaml|cjs|proto))\b/g;

/** The lines of a file that are prose: comments in code and scripts, all of a markdown file. */
function proseLines(file: string, text: string): string[] {
  const lines = text.split("\n");
  if (file.endsWith(".md")) return lines;
  if (/\.(sh|yaml)$/.test(file)) return lines.filter((l) => l.trim().startsWith("#"));
  return lines.filter((l) => /^\s*(\/\/|\*|\/\*)/.test(l));
}

function exists(cited: string, from: string): boolean {
  if (!cited.includes("/")) return names.has(cited);
  return (
    paths.has(cited) ||
    paths.has(normalize(join(dirname(from), cited))) ||
    tracked.some((p) => p.endsWith(`/${cited}`))
  );
}

describe("files named in comments and docs", () => {
  it("all exist", () => {
    const dead: string[] = [];
    for (const file of tracked) {
      if (!/\.(ts|tsx|md|sh|yaml|cjs)$/.test(file) || file.startsWith("proto/gen/")) continue;
      const text = readFileSync(join(root, file), "utf8");
      for (const line of proseLines(file, text)) {
        for (const [, cited] of line.matchAll(CITED)) {
          if (cited!.startsWith("node_modules/") || cited!.startsWith("dist/")) continue;
          if (!exists(cited!, file)) dead.push(`${file}: ${cited}`);
        }
      }
    }
    expect(dead).toEqual([]);
  });
});
