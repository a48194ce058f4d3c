import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRootKey } from "@latchkey/keys";
import { GATEWAY_PROCESS } from "@latchkey/runtime";
import { freePort } from "@latchkey/runtime/testing/free-port";
import { startNginx } from "../test/testing/edge-proxies.ts";
import { startProcess, startStack } from "../test/testing/process-stack.ts";
import { DURATION, type Figures, load, RUNS, type Target, WARMUP } from "./load.ts";
import { pidsMatching, treeOf } from "./procfs.ts";

/** A tiny upstream of its own process, so its CPU is neither the load generator's nor Latchkey's. */
async function upstream(): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      "-e",
      `require("node:http").createServer((q, s) => { q.resume(); s.end("ok"); }).listen(${port}, "127.0.0.1", () => console.log("up"))`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()));
  return { port, child };
}

/**
 * `npm run bench` (BENCH=forwardauth): the same verification two ways in one run, against one
 * gateway (its own process, over the keys, ratelimit and identity services): POST
 * /v2/keys.verifyKey straight to the gateway, and a GET through real nginx whose auth_request asks
 * the gateway's forward-auth endpoint (deploy/edge/nginx.conf.template) before an upstream answers.
 * RUNS pairs in alternating order; prints each pair, the proxy path's throughput as a share of the
 * direct path's, and the p99 the proxy path adds (median of the pairs).
 */
export async function forwardAuth(): Promise<void> {
  const stack = await startStack();
  const dir = mkdtempSync(join(tmpdir(), "latchkey-bench-forward-auth-"));
  const stops: (() => Promise<void> | void)[] = [];
  try {
    const call = (op: string, body: unknown) => stack.call(op, body);
    const apiId = (await call("apis.createApi", { name: "bench-edge" })).body.data.apiId as string;
    const key = (
      await call("keys.createKey", {
        apiId,
        ratelimits: [{ name: "requests", limit: 1_000_000_000, duration: 60_000 }],
      })
    ).body.data.key as string;
    const policies = join(dir, "policies.yaml");
    writeFileSync(
      policies,
      `policies:\n  - { name: bench, apiId: ${apiId}, ratelimits: [{ name: requests }] }\n`,
    );
    const proxyKey = await createRootKey(stack.db.sql, {
      permissions: ["forward_auth.*.verify", `api.${apiId}.verify_key`],
    });
    const gateway = await startProcess("gateway-forward-auth", GATEWAY_PROCESS.entry, {
      KEYS_URL: stack.keys[0]!.url,
      RATELIMIT_URL: stack.ratelimit.url,
      IDENTITY_URL: stack.identity.url,
      METRICS_PORT: "0",
      FORWARD_AUTH_POLICIES_FILE: policies,
      FORWARD_AUTH_WORKSPACE_ID: "ws_default",
    });
    stops.push(() => gateway.stop());
    const up = await upstream();
    stops.push(() => void up.child.kill());
    const nginx = await startNginx({
      latchkey: gateway.url.slice("http://".length),
      rootKey: proxyKey.rootKey,
      upstream: `127.0.0.1:${up.port}`,
    });
    stops.push(() => nginx.stop());

    const latchkey = () => [
      ...treeOf(gateway.child.pid)(),
      ...stack.keys.flatMap((k) => treeOf(k.child.pid)()),
      ...treeOf(stack.ratelimit.child.pid)(),
      ...treeOf(stack.identity.child.pid)(),
    ];
    const processes = { latchkey, postgres: () => pidsMatching("postgres") };
    const direct: Target = {
      url: `${gateway.url}/v2/keys.verifyKey`,
      body: JSON.stringify({ key, ratelimits: [{ name: "requests" }] }),
      headers: { authorization: `Bearer ${stack.rootKey}` },
      expect: '"code":"VALID"',
      processes,
    };
    const proxied: Target = {
      url: `${nginx.url}/orders`,
      method: "GET",
      body: "",
      headers: { authorization: `Bearer ${key}` },
      processes: { ...processes, nginx: () => pidsMatching("nginx") },
    };
    // The endpoint asked as nginx asks it, without nginx: what the gateway's side of the proxy path costs.
    const asked: Target = {
      url: `${gateway.url}/forward-auth`,
      method: "GET",
      body: "",
      headers: {
        authorization: `Bearer ${key}`,
        "x-latchkey-root-key": proxyKey.rootKey,
        "x-original-uri": "/orders",
        "x-original-method": "GET",
        "x-original-host": "api.example.com",
        "x-forwarded-for": "127.0.0.1",
        "x-real-ip": "127.0.0.1",
      },
      processes,
    };
    process.stderr.write("forwardauth: keys.verifyKey direct, and through nginx's auth_request\n");
    await load(direct, WARMUP);
    await load(proxied, WARMUP);
    const pairs: [Figures, Figures][] = [];
    for (let i = 0; i < RUNS; i++) {
      // The order alternates so the machine's drift falls on both.
      const first = i % 2 === 0 ? direct : proxied;
      const a = await load(first, DURATION);
      const b = await load(first === direct ? proxied : direct, DURATION);
      pairs.push(first === direct ? [a, b] : [b, a]);
      const [d, p] = pairs.at(-1)!;
      process.stderr.write(
        `  pair ${i + 1}: direct ${Math.round(d.rps)} req/s p99 ${d.p99} ms, nginx ${Math.round(p.rps)} req/s p99 ${p.p99} ms\n`,
      );
    }
    const alone = await load(asked, DURATION);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
    const ratios = pairs.map(([d, p]) => p.rps / d.rps);
    const added = pairs.map(([d, p]) => p.p99 - d.p99);
    const cpu = (f: Figures) =>
      Object.entries(f.cpu ?? {})
        .map(([g, v]) => `${g} ${v.toFixed(0)} µs`)
        .join(", ");
    process.stdout.write(
      [
        "",
        "| pair | direct req/s | direct p99 ms | through nginx req/s | through nginx p99 ms | ratio | errors |",
        "|------|--------------|---------------|---------------------|----------------------|-------|--------|",
        ...pairs.map(
          ([d, p], i) =>
            `| ${i + 1} | ${Math.round(d.rps)} | ${d.p99} | ${Math.round(p.rps)} | ${p.p99} | ${(p.rps / d.rps).toFixed(2)} | ${d.non2xx + p.non2xx} |`,
        ),
        "",
        `through nginx: ${median(ratios).toFixed(2)} of the direct path's throughput (median of ${RUNS}; ${ratios.map((r) => r.toFixed(2)).join(", ")}), p99 ${median(added) >= 0 ? "+" : ""}${median(added).toFixed(1)} ms (${added.map((a) => a.toFixed(1)).join(", ")})`,
        `CPU per request, last pair: direct ${cpu(pairs.at(-1)![0])}; through nginx ${cpu(pairs.at(-1)![1])}`,
        `/forward-auth asked directly, as nginx asks it: ${Math.round(alone.rps)} req/s, p99 ${alone.p99} ms, CPU ${cpu(alone)}`,
        "",
      ].join("\n"),
    );
  } finally {
    for (const stop of stops.reverse()) await stop();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
