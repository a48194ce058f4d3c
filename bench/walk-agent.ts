import http from "node:http";
import { Session } from "node:inspector/promises";
import { findSourceMap } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Loaded into each process bench/walk.ts starts (node --import), when WALK_AGENT_PORT is set:
 * an inspector session on the process's own thread, driven over loopback HTTP by walk.ts.
 *
 *   POST /start  precise coverage with call counts on, counters reset
 *   POST /take   the repository's functions (not node_modules, not bench/) that ran since the
 *                last /start or /take, with their call counts and their TypeScript positions
 *   POST /trace  a logpoint (a breakpoint whose condition records the time and answers false,
 *                so it never pauses) at the first statement of each function given
 *   POST /hits   the logpoints hit since the last /hits, in order, with their times
 *
 * Nothing here runs on the request path until /trace; coverage makes V8 run unoptimised code,
 * so a process under this agent is for counting, not timing.
 */
const port = Number(process.env["WALK_AGENT_PORT"] ?? 0);
const repo = join(fileURLToPath(import.meta.url), "../..");
const repoUrl = pathToFileURL(repo).href + "/";

interface Fn {
  /** Path in the repository, TypeScript line (1-based) and the function's name. */
  file: string;
  line: number;
  name: string;
  count: number;
  scriptId: string;
  startOffset: number;
  endOffset: number;
}

/** Whether a script is the repository's own code, and not this agent or another bench file. */
const ours = (url: string) =>
  url.startsWith(repoUrl) && !url.includes("/node_modules/") && !url.startsWith(`${repoUrl}bench/`);

if (port > 0) {
  const session = new Session();
  session.connect();
  const scripts = new Map<string, string>();
  session.on("Debugger.scriptParsed", ({ params }) => {
    if (ours(params.url)) scripts.set(params.scriptId, params.url);
  });
  await session.post("Debugger.enable");
  await session.post("Profiler.enable");
  const sources = new Map<string, { text: string; lineStarts: number[] }>();
  const hits: [number, number][] = [];
  /** The functions whose first statement each logpoint marks (two may share one: see trace). */
  const logpoints: number[][] = [];
  (globalThis as { __walkHit?: (point: number) => boolean }).__walkHit = (point) => {
    const at = performance.timeOrigin + performance.now();
    for (const id of logpoints[point]!) hits.push([id, at]);
    return false;
  };

  async function source(scriptId: string) {
    let s = sources.get(scriptId);
    if (s === undefined) {
      const { scriptSource: text } = await session.post("Debugger.getScriptSource", { scriptId });
      const lineStarts = [0];
      for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lineStarts.push(i + 1);
      s = { text, lineStarts };
      sources.set(scriptId, s);
    }
    return s;
  }

  /** A generated offset as line and column (0-based) of the script V8 ran. */
  async function position(scriptId: string, offset: number) {
    const { lineStarts } = await source(scriptId);
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { lineNumber: lo, columnNumber: offset - lineStarts[lo]! };
  }

  async function take(): Promise<Fn[]> {
    const { result } = await session.post("Profiler.takePreciseCoverage");
    const fns: Fn[] = [];
    for (const script of result) {
      if (!ours(script.url)) continue;
      const map = findSourceMap(script.url) ?? findSourceMap(fileURLToPath(script.url));
      for (const f of script.functions) {
        const range = f.ranges[0]!;
        // The script's own top level is no function of the path.
        if (range.count === 0 || (f.functionName === "" && range.startOffset === 0)) continue;
        const at = await position(script.scriptId, range.startOffset);
        const entry = map?.findEntry(at.lineNumber, at.columnNumber) as
          | { originalSource?: string; originalLine?: number }
          | undefined;
        const file = (entry?.originalSource ? fileURLToPath(entry.originalSource) : fileURLToPath(script.url))
          .slice(repo.length + 1)
          .replace(/\\/g, "/");
        fns.push({
          file,
          line: (entry?.originalLine ?? at.lineNumber) + 1,
          name: f.functionName || "(anonymous)",
          count: range.count,
          scriptId: script.scriptId,
          startOffset: range.startOffset,
          endOffset: range.endOffset,
        });
      }
    }
    return fns;
  }

  /**
   * Where a function's body starts in its source text: past its parameter list (or an arrow's lone
   * parameter) and the `{` or `=>` after it. Strings and comments in default values could mislead
   * it; where it finds nothing it answers the function's start.
   */
  function bodyStart(text: string, start: number, end: number): number {
    let depth = 0;
    let opened = false;
    for (let i = start; i < end; i++) {
      const c = text[i];
      if (c === "(") {
        depth++;
        opened = true;
      } else if (c === ")") depth--;
      else if (depth === 0 && c === "=" && text[i + 1] === ">") return i + 1;
      else if (depth === 0 && opened && c === "{") return i;
      else if (depth === 0 && !opened && c === "{" && /\bclass\b/.test(text.slice(start, i))) return start;
    }
    return start;
  }

  async function trace(fns: { id: number; scriptId: string; startOffset: number; endOffset: number }[]) {
    const at = new Map<string, number>();
    const shared: number[][] = [];
    for (const f of fns) {
      const start = await position(f.scriptId, f.startOffset);
      const end = await position(f.scriptId, f.endOffset);
      const { locations } = await session.post("Debugger.getPossibleBreakpoints", {
        start: { scriptId: f.scriptId, ...start },
        end: { scriptId: f.scriptId, ...end },
      });
      // The first breakable place in the function's body: its first statement (or expression). Not
      // one in its parameters, whose defaults run only when an argument is left out.
      const { text, lineStarts } = await source(f.scriptId);
      const body = bodyStart(text, f.startOffset, f.endOffset);
      const first = locations.find((l) => lineStarts[l.lineNumber]! + (l.columnNumber ?? 0) > body);
      if (first === undefined) continue;
      const where = `${first.lineNumber}:${first.columnNumber}:${f.scriptId}`;
      const point = at.get(where);
      // Two functions whose first breakable place is the same (one nested at the other's start) share it.
      if (point !== undefined) {
        logpoints[point]!.push(f.id);
        shared.push(logpoints[point]!);
        continue;
      }
      at.set(where, logpoints.length);
      await session.post("Debugger.setBreakpoint", {
        location: first,
        condition: `globalThis.__walkHit(${logpoints.length})`,
      });
      logpoints.push([f.id]);
    }
    return { set: logpoints.length, shared };
  }

  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", async () => {
      try {
        let answer: unknown;
        if (req.url === "/start") {
          await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
          await session.post("Profiler.takePreciseCoverage");
          answer = { ok: true };
        } else if (req.url === "/take") answer = await take();
        else if (req.url === "/trace") answer = await trace(JSON.parse(body));
        else if (req.url === "/hits") answer = hits.splice(0);
        else {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      } catch (err) {
        res.writeHead(500).end(String((err as Error).stack ?? err));
      }
    });
  });
  server.listen(port, "127.0.0.1");
  server.unref();
}
