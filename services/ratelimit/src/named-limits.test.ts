import { TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { createMemoryRatelimitDeps } from "./deps.ts";
import { checkNamedLimits } from "./named-limits.ts";

describe("named limits for keys and identities", () => {
  it("counts all limits of one verification or none", async () => {
    const deps = createMemoryRatelimitDeps({ clock: new TestClock() });
    const key = { owner: "key_1", name: "requests", limit: 10, duration: 60_000, cost: 1 };
    const identity = { owner: "id_1", name: "tokens", limit: 2, duration: 60_000, cost: 1 };
    expect((await checkNamedLimits(deps, "ws_1", [key, identity])).map((o) => o.success)).toEqual([
      true,
      true,
    ]);
    expect((await checkNamedLimits(deps, "ws_1", [key, identity])).map((o) => o.success)).toEqual([
      true,
      true,
    ]);
    const third = await checkNamedLimits(deps, "ws_1", [key, identity]);
    expect(third.map((o) => o.success)).toEqual([true, false]);
    // The failed verification spent nothing on the key's limit.
    expect((await checkNamedLimits(deps, "ws_1", [{ ...key, cost: 0 }]))[0]!.remaining).toBe(8);
  });

  it("shares an identity's limit between its keys and keeps workspaces and standalone namespaces apart", async () => {
    const deps = createMemoryRatelimitDeps({ clock: new TestClock() });
    const shared = { owner: "id_1", name: "requests", limit: 1, duration: 60_000, cost: 1 };
    expect((await checkNamedLimits(deps, "ws_1", [shared]))[0]!.success).toBe(true);
    expect((await checkNamedLimits(deps, "ws_1", [shared]))[0]!.success).toBe(false);
    expect((await checkNamedLimits(deps, "ws_2", [shared]))[0]!.success).toBe(true);
  });

  it("answers nothing for no limits", async () => {
    expect(await checkNamedLimits(createMemoryRatelimitDeps(), "ws_1", [])).toEqual([]);
  });
});
