import { randomBytes } from "node:crypto";
import autocannon from "autocannon";

/**
 * The other client of BENCH=authflood, in a process of its own so its work does not slow the
 * measured load: POSTs keys.verifyKey at RATE requests per second to URL, each with a new root
 * key (FLOOD=distinct: lk_root_ and 32 random characters, the shape of a real one, so each costs
 * the gateway a lookup) or always the same unknown one (FLOOD=same). Prints "flooding" once
 * started; runs until SIGTERM, then prints {sent, seconds, statuses} as JSON.
 */
const url = process.env["URL"]!;
const rate = Number(process.env["RATE"] ?? 10_000);
const same = process.env["FLOOD"] === "same";
const fixed = `Bearer lk_root_${randomBytes(24).toString("base64url")}`;
const statuses: Record<string, number> = {};
const started = Date.now();

// With a callback autocannon answers the running instance (to stop) rather than a promise.
const instance = autocannon(
  {
    url,
    method: "POST",
    // Enough connections that the rate, not the answers' latency, sets the pace.
    connections: 64,
    overallRate: rate,
    duration: 3_600,
    requests: [
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key: "sk_flood" }),
        setupRequest: (req) => ({
          ...req,
          headers: {
            ...req.headers,
            authorization: same ? fixed : `Bearer lk_root_${randomBytes(24).toString("base64url")}`,
          },
        }),
        onResponse: (status: number) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
        },
      },
    ],
  },
  () => {},
);
instance.on("error", (err: unknown) => {
  process.stderr.write(`flood: ${String(err)}\n`);
});

process.stdout.write("flooding\n");
process.once("SIGTERM", () => {
  instance.stop();
  const sent = Object.values(statuses).reduce((a, b) => a + b, 0);
  process.stdout.write(`${JSON.stringify({ sent, seconds: (Date.now() - started) / 1000, statuses })}\n`);
  process.exit(0);
});
