import { parseArgs } from "node:util";
import { type DifferentialResult, runDifferential } from "./edge-differential.ts";

/**
 * The long differential run of edge.ts against node:http (scripts/http-differential.sh):
 * `--seed N --cases N --pairs N`. Prints the counts and every disagreement; exits 1 on any.
 */
const { values } = parseArgs({
  options: {
    seed: { type: "string", default: "1" },
    cases: { type: "string", default: "100000" },
    pairs: { type: "string", default: "4" },
    show: { type: "string", default: "20" },
  },
});
const seed = Number(values.seed);
const cases = Number(values.cases);
const started = Date.now();

function summary(r: DifferentialResult): string {
  const stricter = [...r.stricter.values()].reduce((a, b) => a + b, 0);
  return `${r.cases} cases: ${r.agreed} agreed (${r.agreedReading} reading ${r.requestsRead} requests alike, the rest refused by both), ${stricter} refused by the edge alone (documented), ${r.disagreements.length} disagreements`;
}

const result = await runDifferential({
  seed,
  cases,
  pairs: Number(values.pairs),
  onProgress: (done, r) => {
    if (done % 10_000 < 1_000)
      process.stderr.write(`${summary(r)} (${Math.round((Date.now() - started) / 1000)} s)\n`);
  },
});
process.stdout.write(`seed ${seed}: ${summary(result)} in ${Math.round((Date.now() - started) / 1000)} s\n`);
for (const [reason, n] of [...result.stricter].sort((a, b) => b[1] - a[1]))
  process.stdout.write(`  ${n}\t${reason}\n`);
for (const d of result.disagreements.slice(0, Number(values.show))) {
  process.stdout.write(`\n${d.detail}\n  ${JSON.stringify(d.bytes.toString("latin1").slice(0, 2000))}\n`);
}
process.exit(result.disagreements.length === 0 ? 0 : 1);
