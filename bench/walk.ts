import { join } from "node:path";
import { freePort, startStack } from "../test/testing/process-stack.ts";
import { seedFullVerification } from "./throughput.ts";

/**
 * How long a verification's walk is: which of Latchkey's own functions (the repository's code,
 * not node_modules) run for one `keys.verifyKey` through separate processes, and in how many files.
 *
 * The gateway, keys, ratelimit and identity services run as separate processes over loopback, as
 * in `STACK=1` (test/testing/process-stack.ts's startStack, events through NATS), each with bench/walk-agent.ts
 * loaded. A key with credits, an autoApply named limit, two roles and a permission query (the full
 * verification of the benchmarks) is verified once to warm every cache, then:
 *
 * 1. V8 precise coverage with call counts, taken in every process before and after one
 *    verification (and SETTLE_MS after its answer, for what the request leaves behind): the
 *    functions that ran, with their call counts;
 * 2. a logpoint at the first statement of each of those functions, and TRACED (7) more
 *    verifications: the order they run in, across processes, by the clock they share. On the walk
 *    is what ran between the request and its answer in most of them; a process's own timers (what
 *    ran as often in an idle span as long) and what came round in only a few are listed apart.
 *
 * Prints the function and file counts and the list, grouped by process, in the order of the
 * walk. `npx tsx bench/walk.ts` (NATS_URL, SETTLE_MS: 300; JSON=1 prints the list as JSON).
 */
const SETTLE_MS = Number(process.env["SETTLE_MS"] ?? 300);
const TRACED = Number(process.env["TRACED"] ?? 7);
const agentPath = join(import.meta.dirname, "walk-agent.ts");

interface Fn {
  file: string;
  line: number;
  name: string;
  count: number;
  scriptId: string;
  startOffset: number;
  endOffset: number;
}

const names = ["gateway", "keys", "ratelimit", "identity"] as const;
type Name = (typeof names)[number];
const ports = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await freePort()]))) as Record<
  Name,
  number
>;
const env = (n: Name) => ({ WALK_AGENT_PORT: String(ports[n]) });

const stack = await startStack({
  natsUrl: process.env["NATS_URL"] || "nats://127.0.0.1:4222",
  nodeArgs: ["--import", agentPath],
  env: { gateway: env("gateway"), keys: env("keys"), ratelimit: env("ratelimit"), identity: env("identity") },
});

async function agent<T>(n: Name, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${ports[n]}${path}`, {
    method: "POST",
    body: body === undefined ? "" : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${n}${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}
const all = <T>(path: string) =>
  Promise.all(names.map((n) => agent<T>(n, path))).then((r) => new Map(names.map((n, i) => [n, r[i]!])));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

try {
  const apiId = (await stack.call("apis.createApi", { name: "walk" })).body.data.apiId;
  const { body } = await seedFullVerification(stack.call, apiId);
  // The warm-up: every cache the verification reads is filled.
  const verify = async () => {
    const started = performance.timeOrigin + performance.now();
    const res = await stack.call("keys.verifyKey", body);
    const answered = performance.timeOrigin + performance.now();
    if (res.body.data?.code !== "VALID") throw new Error(`not VALID: ${JSON.stringify(res.body)}`);
    return { started, answered };
  };
  await verify();
  await sleep(SETTLE_MS);

  // 1. Which functions ran, and how often: an idle span first, for the processes' own timers.
  await all("/start");
  await sleep(SETTLE_MS);
  const idle = await all<Fn[]>("/take");
  await verify();
  await sleep(SETTLE_MS);
  const ran = await all<Fn[]>("/take");

  const key = (p: Name, f: Fn) => `${p} ${f.file}:${f.line} ${f.name}`;
  // 2. In what order: logpoints at each function that ran, and one more verification.
  let nextId = 0;
  const byId = new Map<number, { process: Name; fn: Fn }>();
  for (const n of names) {
    const fns = ran.get(n)!.map((fn) => {
      const id = nextId++;
      byId.set(id, { process: n, fn });
      return { id, scriptId: fn.scriptId, startOffset: fn.startOffset, endOffset: fn.endOffset };
    });
    const { shared } = await agent<{ shared: number[][] }>(n, "/trace", fns);
    for (const ids of shared)
      process.stderr.write(
        `${n}: one first statement for ${ids.map((id) => key(n, byId.get(id)!.fn)).join(" and ")}\n`,
      );
  }
  // Each traced verification's hits, as offsets from its start (ms), the first of each function only.
  const runs: Map<number, number>[] = [];
  let calls: string[] = [];
  for (let r = 0; r < TRACED; r++) {
    await all("/hits");
    const span = await verify();
    await sleep(SETTLE_MS);
    const timeline = [...(await all<[number, number][]>("/hits")).values()]
      .flat()
      .sort((a, b) => a[1] - b[1]);
    const inSpan = timeline.filter(([, at]) => at >= span.started && at <= span.answered);
    const first = new Map<number, number>();
    for (const [id, at] of inSpan) if (!first.has(id)) first.set(id, at - span.started);
    runs.push(first);
    // Every call along the first run, for the returns to a file counted call by call.
    if (r === 0) calls = inSpan.map(([id]) => String(id));
  }
  const idleCount = new Map(names.flatMap((n) => idle.get(n)!.map((f) => [key(n, f), f.count] as const)));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

  // Not functions of the walk: esbuild's __name (tsx adds it to every file) and V8's initializer of a
  // class's fields, which is part of its constructor (listed beside it).
  const helper = (f: Fn) => f.name === "__name" || f.name === "<instance_members_initializer>";
  const entries = [...byId.entries()]
    .filter(([, { fn }]) => !helper(fn))
    .map(([id, { process, fn }]) => {
      const offsets = runs.flatMap((run) => (run.has(id) ? [run.get(id)!] : []));
      return {
        id,
        process,
        fn,
        /** In how many traced verifications it ran between the request and the answer. */
        seen: offsets.length,
        at: offsets.length > 0 ? median(offsets) : Number.POSITIVE_INFINITY,
        // A process's own timers (the event publisher's pump) run about as often when idle; the
        // idle span is as long as the request's, give or take a tick.
        background: idleCount.has(key(process, fn)) && fn.count <= idleCount.get(key(process, fn))! + 1,
        idle: idleCount.get(key(process, fn)) ?? 0,
      };
    });
  // On the walk: ran in most traced verifications' spans. What ran in a few only is a timer that
  // happened to come round (the event publisher's pump, last-used's writes) or work a request
  // leaves behind.
  const onWalk = (e: (typeof entries)[number]) => !e.background && e.seen * 2 > TRACED;
  const walk = entries.filter(onWalk).sort((a, b) => a.at - b.at);
  const background = entries.filter((e) => e.background);
  const elsewhere = entries.filter((e) => !e.background && !onWalk(e));
  const inWalk = new Set(walk.map((e) => String(e.id)));
  calls = calls.filter((id) => inWalk.has(id)).map((id) => byId.get(Number(id))!.fn.file);

  /** Returns to a file already visited, along a sequence of functions. */
  const returnsOf = (files: string[]) => {
    let returns = 0;
    const visited = new Set<string>();
    let current = "";
    for (const file of files) {
      if (file === current) continue;
      if (visited.has(file)) returns++;
      visited.add(file);
      current = file;
    }
    return returns;
  };

  // The same walk without the runtime's protobuf reader and writer (proto/codecs/wire/): the
  // codecs' primitives, a few lines each, called per field.
  const wire = (e: (typeof entries)[number]) => e.fn.file.startsWith("proto/codecs/wire/");
  const coarse = walk.filter((e) => !wire(e));
  const filesOf = (list: typeof walk) => new Set(list.map((e) => e.fn.file)).size;
  /** Functions of the source, one however many processes ran it. */
  const distinct = (list: typeof walk) =>
    new Set(list.map((e) => `${e.fn.file}:${e.fn.line} ${e.fn.name}`)).size;

  const layers = new Map<string, { functions: number; files: Set<string> }>();
  for (const e of walk) {
    const layer = `${e.process} · ${e.fn.file
      .split("/")
      .slice(0, e.fn.file.startsWith("services/") ? 2 : 1)
      .join("/")}`;
    const l = layers.get(layer) ?? { functions: 0, files: new Set<string>() };
    l.functions++;
    l.files.add(e.fn.file);
    layers.set(layer, l);
  }

  if (process.env["JSON"]) {
    const plain = (list: typeof walk) => list.map((e) => ({ process: e.process, ...e.fn }));
    process.stdout.write(
      `${JSON.stringify({ walk: plain(walk), background: plain(background), elsewhere: plain(elsewhere) }, null, 2)}\n`,
    );
  } else {
    const line = (e: (typeof entries)[number]) =>
      `  ${e.process.padEnd(9)} ${`${e.fn.file}:${e.fn.line}`.padEnd(58)} ${e.fn.name}${e.fn.count > 1 ? ` ×${e.fn.count}` : ""}${e.idle > 0 ? ` (when idle ×${e.idle})` : ""}${e.seen < TRACED ? ` (in ${e.seen} of ${TRACED})` : ""}`;
    process.stdout.write(
      `One keys.verifyKey (credits, autoApply limit, 2 roles, permission query), separate processes, warm:\n` +
        `  ${walk.length} functions in ${filesOf(walk)} files between the request and its answer ` +
        `(${distinct(walk)} functions of the source: some run in several processes); ` +
        `${returnsOf(walk.map((e) => e.fn.file))} returns to a file already visited in the order below ` +
        `(${returnsOf(calls)} along all ${calls.length} calls)\n` +
        `  without the protobuf reader and writer (proto/codecs/wire/): ${coarse.length} functions ` +
        `(${distinct(coarse)} of the source) in ` +
        `${filesOf(coarse)} files, ${returnsOf(coarse.map((e) => e.fn.file))} returns\n\n` +
        `By process and layer (functions, files):\n${[...layers]
          .map(
            ([layer, l]) =>
              `  ${layer.padEnd(40)} ${String(l.functions).padStart(4)} ${String(l.files.size).padStart(4)}`,
          )
          .join("\n")}\n\n` +
        `In the order they first ran (median of ${TRACED} traced verifications):\n${walk.map(line).join("\n")}\n\n` +
        `The processes' own timers (ran as often when idle):\n${background.map(line).join("\n") || "  none"}\n\n` +
        `Ran in the counted span, but between request and answer in at most half the traced verifications\n` +
        `(timers that came round, or work left for after the answer):\n${elsewhere.map(line).join("\n") || "  none"}\n`,
    );
  }
} finally {
  await stack.stop();
}
process.exit(0);
