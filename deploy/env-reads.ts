import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  CONTEXTS,
  type ContextName,
  contextSettings,
  contextUrlSettings,
  type Setting,
} from "../packages/runtime/src/contexts.ts";

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
/**
 * What the runtime reads for a source, read through the settings of contexts.ts rather than by
 * name: runService("<context>", …) reads contextSettings(<context>), contextUrls() every
 * context's URL setting.
 */
const service = /\brunService\(\s*["'`]([a-z]+)["'`]/g;
const urls = /(?<!function )\bcontextUrls\(\s*\)/g;

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
    const declared: Setting[] = [];
    for (const [, name] of text.matchAll(service)) {
      if (!(name! in CONTEXTS))
        throw new Error(`${source}: runService("${name}") names no context of contexts.ts`);
      declared.push(...contextSettings(name as ContextName));
    }
    if ([...text.matchAll(urls)].length > 0) declared.push(...contextUrlSettings());
    for (const s of declared) {
      read.add(s.name);
      if (s.required) required.add(s.name);
      else if (s.fallback !== undefined) {
        defaults.set(s.name, (defaults.get(s.name) ?? new Set()).add(String(s.fallback)));
      }
    }
  }
  return { read, required, defaults };
}
