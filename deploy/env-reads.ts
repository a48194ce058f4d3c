import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface EnvReads {
  /** Every variable the sources read, by env.string/env.int/env.bool/env.required or process.env. */
  read: Set<string>;
  /** The ones read with env.required: the process refuses to start without them. */
  required: Set<string>;
  /** The literal fallbacks the code gives a variable (env.string("LOG_LEVEL", "info") -> info). */
  defaults: Map<string, Set<string>>;
}

const call =
  /\benv\.(string|int|bool|required)\(\s*["'`]([A-Z][A-Z0-9_]*)["'`]\s*(?:,\s*(?:"([^"]*)"|'([^']*)'|([0-9][0-9_.]*|true|false)\s*[,)]))?/g;
const direct = /\bprocess\.env(?:\[\s*["'`]([A-Z][A-Z0-9_]*)["'`]\s*\]|\.([A-Z][A-Z0-9_]*))/g;

/** The environment variables that `sources` (paths relative to `root`) read, found by their spelling. */
export function envReads(root: string, sources: readonly string[]): EnvReads {
  const read = new Set<string>();
  const required = new Set<string>();
  const defaults = new Map<string, Set<string>>();
  for (const source of sources) {
    const text = readFileSync(join(root, source), "utf8");
    for (const [, how, name, double, single, literal] of text.matchAll(call)) {
      read.add(name!);
      if (how === "required") required.add(name!);
      const fallback = double ?? single ?? literal?.replaceAll("_", "");
      if (fallback !== undefined) defaults.set(name!, (defaults.get(name!) ?? new Set()).add(fallback));
    }
    for (const [, bracketed, dotted] of text.matchAll(direct)) read.add((bracketed ?? dotted)!);
  }
  return { read, required, defaults };
}
