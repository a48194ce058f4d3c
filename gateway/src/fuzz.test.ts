import { readdirSync } from "node:fs";
import { createRouterTransport } from "@connectrpc/connect";
import { createLogger, hashKey, MemoryBus, TestClock } from "@latchkey/runtime";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// The real services, in memory, imported by path as real-services.test.ts does.
import { analyticsRoutes, createMemoryAnalyticsDeps } from "../../services/analytics/src/index.ts";
import { createMemoryIdentityDeps, identityRoutes } from "../../services/identity/src/index.ts";
import { createMemoryKeysDeps } from "../../services/keys/src/deps-test-kit.ts";
import { keysRoutes } from "../../services/keys/src/index.ts";
import { createMemoryRatelimitDeps, ratelimitRoutes } from "../../services/ratelimit/src/index.ts";
import { createGateway, type Gateway, listen } from "./gateway.ts";
import { OPERATIONS, type Operation, routes } from "./routes/index.ts";
import {
  type FuzzBody,
  mutatedArbitrary,
  nestedAtEveryPlace,
  placesIn,
  validArbitrary,
} from "./schema-arbitrary.ts";
import { answeringEverything, harness } from "./testing.ts";

/**
 * Bodies drawn from every operation's schema (schema-arbitrary.ts), valid and mutated, sent
 * over a real socket to the gateway's own HTTP server. Whatever the body: never a 5xx, every
 * 4xx in the error shape with its status, every 2xx in the envelope. Deterministic: one seed.
 */
const SEED = 20_261_127;

/** A failure, or undefined when the answer has the shape its status calls for. */
function shapeProblem(status: number, body: any): string | undefined {
  if (status >= 500) return `answered ${status}`;
  if (body === null || typeof body !== "object") return "the answer is not a JSON object";
  const requestId = body.meta?.requestId;
  if (typeof requestId !== "string" || !/^req_[a-zA-Z0-9]{16}$/.test(requestId)) return "no meta.requestId";
  if (Object.keys(body.meta).length !== 1) return "meta holds more than requestId";
  if (status < 300) {
    if (!("data" in body)) return "a success without data";
    const extra = Object.keys(body).filter((k) => !["meta", "data", "pagination"].includes(k));
    return extra.length > 0 ? `a success with ${extra.join(", ")}` : undefined;
  }
  const extra = Object.keys(body).filter((k) => k !== "meta" && k !== "error");
  if (extra.length > 0) return `an error with ${extra.join(", ")}`;
  const e = body.error;
  if (e === null || typeof e !== "object") return "no error object";
  const wrong = Object.keys(e).filter((k) => !["title", "detail", "status", "type", "errors"].includes(k));
  if (wrong.length > 0) return `error holds ${wrong.join(", ")}`;
  if (typeof e.title !== "string" || e.title === "") return "no error.title";
  if (typeof e.detail !== "string" || e.detail === "") return "no error.detail";
  if (e.status !== status) return `error.status ${e.status} on a ${status}`;
  if (typeof e.type !== "string" || !e.type.startsWith("https://unkey.com/docs/errors/"))
    return "no error.type";
  // As Unkey's BadRequestErrorDetails: a 400 always lists its violations (perhaps none).
  if (status === 400 && e.errors === undefined) return "a 400 without error.errors";
  if (e.errors !== undefined) {
    if (!Array.isArray(e.errors)) return "error.errors is not a list";
    for (const v of e.errors) {
      const keys = Object.keys(v).filter((k) => !["location", "message", "fix"].includes(k));
      if (keys.length > 0) return `a violation holds ${keys.join(", ")}`;
      if (typeof v.location !== "string" || !v.location.startsWith("/body"))
        return "a violation without location";
      if (typeof v.message !== "string" || v.message === "") return "a violation without message";
      if (v.fix !== undefined && typeof v.fix !== "string") return "a violation whose fix is not text";
    }
  }
  return undefined;
}

/** The statuses an operation documents: those its route tests are named after (routes/<op>.<status>.test.ts). */
const documented = (() => {
  const byOperation = new Map<string, Set<number>>();
  for (const file of readdirSync(new URL("./routes", import.meta.url))) {
    const m = /^(.+)\.(\d{3})\.test\.ts$/.exec(file);
    if (m) byOperation.set(m[1]!, (byOperation.get(m[1]!) ?? new Set()).add(Number(m[2])));
  }
  // Unkey's ratelimit.* spellings are served by the ratelimits.* routes and documented with them.
  return (operation: Operation) =>
    byOperation.get(operation.replace(/^ratelimit\./, "ratelimits.")) ?? new Set();
})();

interface Sent {
  label: string;
  status: number;
  problem: string | undefined;
  raw: string | Buffer;
}

function over(gateway: Gateway, rootKey: string) {
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    server = await listen(gateway, 0, "127.0.0.1");
  });
  afterAll(() => server.close());
  return async (operation: Operation, body: FuzzBody): Promise<Sent> => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: body.raw,
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return {
      label: body.label,
      status: res.status,
      problem: shapeProblem(res.status, parsed),
      raw: body.raw,
    };
  };
}

const shown = (s: Sent) =>
  `${s.label}: ${s.status} ${s.problem ?? ""} ${String(s.raw).slice(0, 200)}${String(s.raw).length > 200 ? "…" : ""}`;

const samples = <T>(arbitrary: fc.Arbitrary<T>, numRuns: number, seed: number) =>
  fc.sample(arbitrary, { seed, numRuns });

describe("fuzzing every operation over services that answer success", () => {
  const h = harness(answeringEverything());
  const send = over(h.gateway, h.rootKey("*"));

  it.each(OPERATIONS.map((op, i) => [op, i] as const))(
    "%s: 30 valid bodies answer 200; 60 mutated ones, and deep nesting at every place, never 5xx; each in its shape",
    async (operation, i) => {
      const schema = routes[operation].schema;
      const failures: string[] = [];
      const valid = samples(validArbitrary(schema), 30, SEED + i);
      for (const value of valid) {
        const sent = await send(operation, { label: "valid", raw: JSON.stringify(value) });
        if (sent.status !== 200 || sent.problem !== undefined) failures.push(shown(sent));
      }
      const richest = valid.reduce((a, b) => (placesIn(b) > placesIn(a) ? b : a));
      const hostile = [
        ...samples(mutatedArbitrary(schema), 60, SEED + 1_000 + i),
        ...nestedAtEveryPlace(richest),
      ];
      for (const body of hostile) {
        const sent = await send(operation, body);
        if (sent.problem !== undefined) failures.push(shown(sent));
      }
      expect(failures).toEqual([]);
    },
    60_000,
  );

  it("leaves Object.prototype as it was", () => {
    expect(Object.keys(Object.prototype)).toEqual([]);
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
  });
});

describe("fuzzing every operation over the real services in memory", () => {
  const clock = new TestClock(Date.UTC(2026, 0, 1));
  const bus = new MemoryBus();
  const keysDeps = createMemoryKeysDeps({ bus, clock, log: createLogger("keys", "silent") });
  const gateway = createGateway({
    keys: createRouterTransport(keysRoutes(keysDeps)),
    ratelimit: createRouterTransport(ratelimitRoutes(createMemoryRatelimitDeps({ bus, clock }))),
    identity: createRouterTransport(
      identityRoutes(createMemoryIdentityDeps({ bus, clock, log: createLogger("identity", "silent") })),
    ),
    analytics: createRouterTransport(
      analyticsRoutes(createMemoryAnalyticsDeps({ log: createLogger("analytics", "silent") })),
    ),
    log: createLogger("gateway", "silent"),
    clock,
    bus,
  });
  const root = "lk_root_fuzz_real_services";
  keysDeps.store.putRootKey({
    id: "rk_fuzz",
    workspaceId: "ws_fuzz",
    permissions: ["*"],
    revokedAt: null,
    hash: hashKey(root),
  });
  const send = over(gateway, root);

  it.each(OPERATIONS.map((op, i) => [op, i] as const))(
    "%s: valid bodies answer 2xx or a documented 4xx, mutated ones never 5xx",
    async (operation, i) => {
      const schema = routes[operation].schema;
      const statuses = documented(operation);
      const failures: string[] = [];
      for (const value of samples(validArbitrary(schema), 10, SEED + 2_000 + i)) {
        const sent = await send(operation, { label: "valid", raw: JSON.stringify(value) });
        if (sent.problem !== undefined || (sent.status >= 300 && !statuses.has(sent.status))) {
          failures.push(`${shown(sent)} (documented: ${[...statuses].join(", ")})`);
        }
      }
      for (const body of samples(mutatedArbitrary(schema), 15, SEED + 3_000 + i)) {
        const sent = await send(operation, body);
        if (sent.problem !== undefined) failures.push(shown(sent));
      }
      expect(failures).toEqual([]);
    },
    60_000,
  );
});
