import { env, newId, type StartingAnswers } from "@latchkey/runtime";
import { MAX_ROOT_KEY_CACHE_TTL_MS } from "./gateway.ts";
import { Problem, problemBody, problems } from "./problem.ts";

/**
 * The public port's answers while the gateway (or npm start) waits for what it needs
 * (packages/runtime/src/bootstrap.ts): every request a 503 problem, as when a service behind it
 * is unavailable, saying what it waits for. No /metrics: the public port never serves them.
 */
export const gatewayStarting: StartingAnswers = {
  metrics: false,
  unavailable(_req, res, message) {
    const u = problems.unavailable();
    res.writeHead(503, { "content-type": "application/json" });
    res.end(problemBody(newId("req"), new Problem(u.status, u.title, u.type, message)));
  },
};

/**
 * ROOT_KEY_CACHE_TTL_MS, checked with the other settings before anything connects: how long a
 * resolved root key is trusted, at most MAX_ROOT_KEY_CACHE_TTL_MS (a revoked root key whose notice
 * is lost works that long).
 */
export function rootKeyCacheTtlMsFromEnv(): number {
  const ttl = env.int("ROOT_KEY_CACHE_TTL_MS", 5_000);
  // The words createGateway (gateway.ts) refuses it with, said before anything connects.
  if (!(ttl >= 0 && ttl <= MAX_ROOT_KEY_CACHE_TTL_MS)) {
    throw new Error(
      `ROOT_KEY_CACHE_TTL_MS must be 0 to ${MAX_ROOT_KEY_CACHE_TTL_MS} ms: a revoked root key keeps working until its cache entry expires; got ${ttl}`,
    );
  }
  return ttl;
}
