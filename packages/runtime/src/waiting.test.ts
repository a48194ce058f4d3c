import { describe, expect, it } from "vitest";
import { untilAvailable } from "./waiting.ts";

function recorder() {
  const lines: { fields: Record<string, unknown>; msg: string }[] = [];
  const waits: number[] = [];
  return {
    lines,
    waits,
    log: {
      warn: (fields: Record<string, unknown>, msg: string) => void lines.push({ fields, msg }),
    } as never,
    sleep: async (ms: number) => void waits.push(ms),
  };
}

describe("untilAvailable", () => {
  it("tries until the dependency answers, one log line per failed try, waiting longer each time up to the cap", async () => {
    const r = recorder();
    let tries = 0;
    const value = await untilAvailable(
      "NATS",
      async () => {
        tries++;
        if (tries < 7) throw new Error("TIMEOUT");
        return "connected";
      },
      { log: r.log, sleep: r.sleep, firstDelayMs: 100, maxDelayMs: 1_000 },
    );
    expect(value).toBe("connected");
    expect(tries).toBe(7);
    expect(r.lines).toHaveLength(6);
    expect(r.lines[0]).toEqual({
      fields: { dependency: "NATS", tries: 1, retryInMs: r.waits[0], err: "TIMEOUT" },
      msg: "NATS is not available yet; trying again",
    });
    // 100, 200, 400, 800, then the 1,000 cap, each less up to a fifth for jitter.
    const bases = [100, 200, 400, 800, 1_000, 1_000];
    r.waits.forEach((w, i) => {
      expect(w).toBeGreaterThanOrEqual(bases[i]! * 0.8);
      expect(w).toBeLessThanOrEqual(bases[i]!);
    });
  });

  it("answers at once, logging nothing, when the first try succeeds", async () => {
    const r = recorder();
    expect(await untilAvailable("PostgreSQL", async () => 1, { log: r.log, sleep: r.sleep })).toBe(1);
    expect(r.lines).toEqual([]);
  });

  it("stops waiting when its signal is aborted, with the signal's reason", async () => {
    const r = recorder();
    const stop = new AbortController();
    const waiting = untilAvailable(
      "ClickHouse",
      async () => {
        throw new Error("ECONNREFUSED");
      },
      { log: r.log, firstDelayMs: 60_000, signal: stop.signal },
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort(new Error("stopping"));
    await expect(waiting).rejects.toThrow("stopping");
    expect(r.lines).toHaveLength(1);
  });

  it("throws at once, logging nothing, an error `permanent` says no wait can change, after retrying the others", async () => {
    const r = recorder();
    let tries = 0;
    const refusal = new Error("another process counts in its own memory");
    const waiting = untilAvailable(
      "PostgreSQL",
      async () => {
        tries++;
        throw tries < 3 ? new Error("ECONNREFUSED") : refusal;
      },
      { log: r.log, sleep: r.sleep, permanent: (err) => err === refusal },
    );
    await expect(waiting).rejects.toBe(refusal);
    expect(tries).toBe(3);
    expect(r.lines.map((l) => l.fields["err"])).toEqual(["ECONNREFUSED", "ECONNREFUSED"]);
  });
});
