import { type Proc, startProcess, startStack } from "../test/testing/process-stack.ts";
import { describeLoad, type Figures, measure, ratioOf, row, type Target } from "./load.ts";
import { serviceRssMiB } from "./procfs.ts";
import { seededKey, seedKeys } from "./seed.ts";
import { seedFullVerification } from "./throughput.ts";

/** The key counts measured (docs/performance.md), capped by SCALE_MAX (itself measured when it is not one of them). */
function sizes(): number[] {
  const max = Number(process.env["SCALE_MAX"] ?? 1_000_000);
  const listed = [1_000, 100_000, 1_000_000].filter((n) => n <= max);
  return listed.includes(max) ? listed : [...listed, max];
}

/** The working set of the hot-keys rows. */
const HOT = 1_000;

interface Size {
  keys: number;
  figures: Figures;
  /** The same load over HOT keys spread over the N: cost by table size, the working set fixed. */
  hot: Figures;
  /** The full verification of one key among the N. */
  full: Figures;
  keysRss: number;
  gatewayRss: number;
  tableMiB: number;
  seconds: number;
}

/**
 * `npm run bench` (BENCH=scale): keys.verifyKey through the gateway (separate
 * processes) over a key chosen at random per request among N keys seeded in
 * bulk, for N = 10^3, 10^5, 10^6 (SCALE_MAX caps it), and over 1,000 hot keys
 * spread over the N (the table grows, the working set does not). Cost per
 * verification should stay flat as N grows, and the services' resident memory
 * bounded: each row gives throughput, latency, the ratio to the ceiling and to
 * the smallest size, and the keys service's and the gateway's RSS after the run.
 *
 * Every run follows a run of the ceiling and is taken as its ratio to it, as in the throughput
 * table, so "vs 10^3" is a quotient of paired ratios: the machine's drift over the minutes
 * between the sizes (seeding 10^6 keys takes a while) cancels out.
 */
export async function scale(): Promise<void> {
  const stack = await startStack();
  const peers: Proc[] = [];
  try {
    const apiId = (await stack.call("apis.createApi", { name: "scale" })).body.data.apiId as string;
    const gw = `${stack.gateway.url}/v2/keys.verifyKey`;
    const auth = { authorization: `Bearer ${stack.rootKey}` };
    const keysProc = stack.keys[0]!;
    // The full-verification key (credits, an autoApply limit, two roles, a permission query): one key verified
    // while the table around it grows, its credit spends and look-ups included.
    const full = await seedFullVerification((op, body) => stack.call(op, body), apiId);

    await seedKeys(stack.db.sql, apiId, 0, 1);
    let seeded = 1;
    const sample = await stack.call("keys.verifyKey", { key: seededKey(0) });
    const ceilingProc = await startProcess("ceiling", "bench/ceiling.ts", {
      BODY_SIZE: String(JSON.stringify(sample.body).length),
    });
    peers.push(ceilingProc);
    process.stderr.write(`scale (${describeLoad()})\n`);
    const ceiling: Target = { url: `${ceilingProc.url}/`, body: JSON.stringify({ key: seededKey(0) }) };
    const top = await measure("ceiling", ceiling);

    const results: Size[] = [];
    for (const n of sizes()) {
      const started = Date.now();
      await seedKeys(stack.db.sql, apiId, seeded, n);
      seeded = n;
      const seconds = (Date.now() - started) / 1000;
      process.stderr.write(`  seeded ${n} keys (${seconds.toFixed(1)} s for the new ones)\n`);
      // A figure over NOT_FOUND answers would measure the wrong thing: the seeded keys must verify.
      for (const i of [0, n - 1, Math.floor(Math.random() * n)]) {
        const check = await stack.call("keys.verifyKey", { key: seededKey(i) });
        if (check.body.data?.code !== "VALID")
          throw new Error(`seeded key ${seededKey(i)} does not verify: ${JSON.stringify(check.body)}`);
      }
      const figures = await measure(
        `verify among ${n} keys`,
        {
          url: gw,
          headers: auth,
          body: () => `{"key":"${seededKey(Math.floor(Math.random() * n))}"}`,
          expect: '"code":"VALID"',
        },
        ceiling,
      );
      const hotKeys = Array.from({ length: HOT }, (_, i) => seededKey(Math.floor((i * n) / HOT)));
      const hot = await measure(
        `verify among ${HOT} hot keys of ${n}`,
        {
          url: gw,
          headers: auth,
          body: () => `{"key":"${hotKeys[Math.floor(Math.random() * HOT)]}"}`,
          expect: '"code":"VALID"',
        },
        ceiling,
      );
      const fullFigures = await measure(
        `verify the full-verification key among ${n}`,
        { url: gw, headers: auth, body: full.body, expect: '"code":"VALID"' },
        ceiling,
      );
      const [table] = await stack.db.sql<{ bytes: number }[]>`SELECT pg_total_relation_size('keys') AS bytes`;
      results.push({
        keys: n,
        figures,
        hot,
        full: fullFigures,
        keysRss: serviceRssMiB(keysProc.child.pid),
        gatewayRss: serviceRssMiB(stack.gateway.child.pid),
        tableMiB: Number(table?.bytes ?? 0) / 2 ** 20,
        seconds,
      });
    }

    const mib = (n: number) => n.toFixed(1).padStart(8);
    /** One row per N of `pick`'s figures, with the quotient of its ratio to the smallest N's. */
    const rows = (pick: (r: Size) => Figures, extra: (r: Size) => string = () => "") =>
      results.map(
        (r) =>
          `${row(`N = ${r.keys.toLocaleString("en-US")}`, pick(r), top)} ${(
            ratioOf(pick(r), top) / ratioOf(pick(results[0]!), top)
          )
            .toFixed(2)
            .padStart(7)} |${extra(r)}`,
      );
    const heading = (title: string, more = "") => [
      `| ${title.padEnd(64)} |   req/s | p50 ms | p99 ms | ratio | errors | vs 10^3 |${more}`,
      `|${"-".repeat(66)}|---------|--------|--------|-------|--------|---------|${more.replace(/[^|]/g, "-")}`,
    ];
    const lines = [
      "",
      ...heading(
        "keys.verifyKey, random key among N (separate processes)",
        " keys RSS MiB | gateway RSS MiB | keys table MiB |",
      ),
      ...rows(
        (r) => r.figures,
        (r) => `     ${mib(r.keysRss)} |        ${mib(r.gatewayRss)} |       ${mib(r.tableMiB)} |`,
      ),
      "",
      ...heading(`keys.verifyKey, one of ${HOT.toLocaleString("en-US")} hot keys spread over N`),
      ...rows((r) => r.hot),
      "",
      ...heading("keys.verifyKey, the full-verification key (credits, limit, roles) among N"),
      ...rows((r) => r.full),
      "",
      "ratio: to the ceiling run just before; vs 10^3: that ratio over the smallest N's (flat = 1.00); errors include",
      "answers that are not VALID;",
      "random key among N: the working set is the whole table, so at large N most verifications are a first",
      "look-up of their key (a PostgreSQL query; the cache holds KEY_CACHE_SIZE keys); hot keys: the working set",
      "stays 1,000 keys whatever N is, so the row shows what the size of the table alone costs; the full-verification",
      "key: one key with credits, a limit and roles while the table grows (its ratio is to a ceiling answering",
      "the plain verification's size);",
      "RSS: VmRSS of the service's node process after the run; keys table: pg_total_relation_size('keys').",
      "",
    ];
    process.stdout.write(lines.join("\n"));
  } finally {
    await Promise.all(peers.map((p) => p.stop()));
    await stack.stop();
  }
}
