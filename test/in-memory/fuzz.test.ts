import { OPERATIONS, routes } from "@latchkey/gateway/routes/index";
import { documented, over, SEED, samples, shown } from "@latchkey/gateway/testing/fuzz-checks";
import { mutatedArbitrary, validArbitrary } from "@latchkey/gateway/testing/schema-arbitrary";
import { describe, expect, it } from "vitest";
import { inMemoryStack } from "../testing/in-memory-stack.ts";

// Bodies drawn from every operation's schema, as gateway/src/fuzz.test.ts sends them, here over the real
// services: a valid body is answered 2xx or a 4xx its route tests document, a mutated one never 5xx.
describe("fuzzing every operation over the real services in memory", () => {
  const { gateway, rootKey } = inMemoryStack("fuzz_real_services");
  const send = over(gateway, rootKey);

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
