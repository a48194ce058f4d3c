import { describe, expect, it } from "vitest";
import { over, refusalProblem, SEED, samples, shown } from "../testing/fuzz-checks.ts";
import { answeringEverything, harness } from "../testing/in-memory-gateway.ts";
import {
  mutatedArbitrary,
  nestedAtEveryPlace,
  placesIn,
  unicodeArbitrary,
  validArbitrary,
} from "../testing/schema-arbitrary.ts";
import { OPERATIONS, routes } from "./routes/index.ts";

/**
 * Bodies drawn from every operation's schema (testing/schema-arbitrary.ts), valid and mutated, sent
 * over a real socket to the gateway's own HTTP server. Whatever the body: never a 5xx, every
 * 4xx in the error shape with its status, every 2xx in the envelope. Deterministic: one seed.
 * The same over the real services in memory: test/in-memory/fuzz.test.ts.
 */
describe("fuzzing every operation over services that answer success", () => {
  // Every body of portal.exchangeCode from one client: its budget (portal-web.ts) is not what is fuzzed here.
  const h = harness({ ...answeringEverything(), exchangeBudget: { burst: 1e9, perMinute: 1e9 } });
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
        const problem = refusalProblem(body, sent);
        if (problem !== undefined) failures.push(`${shown(sent)}: ${problem}`);
      }
      expect(failures).toEqual([]);
    },
    60_000,
  );

  // The fakes fail as PostgreSQL would on a string it cannot store (testing/in-memory-gateway.ts, storeLikePostgres),
  // so text that slips past the gateway answers 500 here as it would in a real store.
  it.each(OPERATIONS.map((op, i) => [op, i] as const))(
    "%s: 30 bodies with hostile unicode (lone surrogates, U+0000, beyond the BMP; escaped, literal, in keys) never 5xx; what no store can hold answers 400 naming where",
    async (operation, i) => {
      const failures: string[] = [];
      let refused = 0;
      for (const body of samples(unicodeArbitrary(routes[operation].schema), 30, SEED + 4_000 + i)) {
        const sent = await send(operation, body);
        const problem = refusalProblem(body, sent);
        if (problem !== undefined) failures.push(`${shown(sent)}: ${problem}`);
        if (body.refusedAt !== undefined) refused++;
      }
      expect(failures).toEqual([]);
      // The draw holds refusals, not only text every store keeps.
      expect(refused).toBeGreaterThan(5);
    },
    60_000,
  );

  it("leaves Object.prototype as it was", () => {
    expect(Object.keys(Object.prototype)).toEqual([]);
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
  });
});
