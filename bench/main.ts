import { authflood } from "./authflood.ts";
import { forwardAuth } from "./forward-auth.ts";
import { propagation } from "./propagation.ts";
import { replicasScale } from "./replicas-scale.ts";
import { scale } from "./scale.ts";
import { throughput } from "./throughput.ts";

/**
 * `npm run bench`: the measurements docs/performance.md describes, as tables printed to stdout
 * (progress goes to stderr). BENCH picks them: all (default), throughput,
 * propagation, scale, authflood (verification beside a flood of bogus root keys), forwardauth
 * (keys.verifyKey direct beside the same verification through nginx's auth_request), replicas (the
 * full verification through N gateways and N keys services, N of REPLICAS: 1,2,3), or a
 * comma-separated list. A benchmark, not a test: it
 * prints figures and asserts nothing.
 *
 * Settings (env): CONNECTIONS (64), DURATION (10 s), RUNS (3), WARMUP (3 s) for
 * every autocannon load; NATS_URL (default nats://127.0.0.1:4222) for throughput and propagation; CHANGES (200) for propagation; SCALE_MAX
 * (1000000) for scale; TABLE_KEYS (100000) other keys in the table for throughput and bench:ab;
 * FLOOD_RATE (10000) bogus root keys per second for authflood.
 */
const all = ["throughput", "propagation", "scale", "authflood", "forwardauth", "replicas"] as const;
type Bench = (typeof all)[number];

function selected(): Bench[] {
  const asked = (process.env["BENCH"] ?? "all").split(",").map((b) => b.trim());
  if (asked.includes("all")) return [...all];
  const unknown = asked.filter((b) => !(all as readonly string[]).includes(b));
  if (unknown.length > 0)
    throw new Error(`BENCH: unknown ${unknown.join(", ")}; use all or ${all.join(", ")}`);
  return all.filter((b) => asked.includes(b));
}

async function main() {
  const started = Date.now();
  const benches = selected();
  for (const bench of benches) {
    if (bench === "throughput") await throughput();
    if (bench === "propagation") await propagation();
    if (bench === "scale") await scale();
    if (bench === "authflood") await authflood();
    if (bench === "forwardauth") await forwardAuth();
    if (bench === "replicas") await replicasScale();
  }
  process.stderr.write(
    `npm run bench (${benches.join(", ")}) took ${Math.round((Date.now() - started) / 1000)} s\n`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
