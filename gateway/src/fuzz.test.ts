import { describe, expect, it } from "vitest";
import { over, SEED, samples, shown } from "./fuzz-kit.ts";
import { OPERATIONS, routes } from "./routes/index.ts";
import { mutatedArbitrary, nestedAtEveryPlace, placesIn, validArbitrary } from "./schema-arbitrary.ts";
import { answeringEverything, harness } from "./testing.ts";

/**
 * Bodies drawn from every operation's schema (schema-arbitrary.ts), valid and mutated, sent
 * over a real socket to the gateway's own HTTP server. Whatever the body: never a 5xx, every
 * 4xx in the error shape with its status, every 2xx in the envelope. Deterministic: one seed.
 * The same over the real services in memory: test/in-memory/fuzz.test.ts.
 */
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
