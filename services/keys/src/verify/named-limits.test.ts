import { describe, expect, it } from "vitest";
import type { CachedKey } from "../store/keys-store.ts";
import type { ResolvedIdentity } from "./identity-cache.ts";
import { limitsToCheck } from "./named-limits.ts";

const limit = (name: string, autoApply: boolean) => ({
  id: `rl_${name}`,
  name,
  limit: 10,
  duration: 1_000,
  autoApply,
});
const key = (ratelimits: CachedKey["ratelimits"]) => ({ id: "key_1", ratelimits }) as CachedKey;
const identity = (ratelimits: ResolvedIdentity["ratelimits"]): ResolvedIdentity => ({
  id: "id_1",
  externalId: "user_1",
  metaJson: undefined,
  ratelimits,
  allowList: null,
});

describe("limitsToCheck", () => {
  it("answers the same list for a key record and identity record without limits named in the request", () => {
    const k = key([limit("calls", true), limit("named", false)]);
    const i = identity([limit("shared", true)]);
    const first = limitsToCheck(k, i, []);
    expect(first.map((l) => `${l.name}:${l.owner}`)).toEqual(["calls:key_1", "shared:id_1"]);
    expect(limitsToCheck(k, i, [])).toBe(first);
  });

  it("works them out again for another identity record (the identity changed)", () => {
    const k = key([limit("calls", true)]);
    const first = limitsToCheck(k, identity([]), []);
    const changed = limitsToCheck(k, identity([limit("shared", true)]), []);
    expect(changed).not.toBe(first);
    expect(changed.map((l) => l.name)).toEqual(["calls", "shared"]);
    expect(limitsToCheck(k, null, []).map((l) => l.name)).toEqual(["calls"]);
  });

  it("works out a request naming limits on its own, with its costs", () => {
    const k = key([limit("calls", true), limit("named", false)]);
    const named = limitsToCheck(k, null, [{ name: "named", cost: 3, custom: undefined }]);
    expect(named.map((l) => `${l.name}:${l.cost}`)).toEqual(["calls:1", "named:3"]);
    expect(limitsToCheck(k, null, [])).not.toContain(named[1]);
  });
});
