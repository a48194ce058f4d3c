import { create, toBinary } from "@bufbuild/protobuf";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  ForwardAuthPoliciesChangedSchema,
  type ForwardAuthPolicy,
  ForwardAuthPolicySchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { createLogger, MemoryBus, TestClock } from "@latchkey/runtime";
import { callerOf } from "@latchkey/runtime/testing/caller";
import { describe, expect, it } from "vitest";
import { parsePolicies } from "./file.ts";
import { PolicySet, type PolicySource } from "./policy.ts";
import {
  FORWARD_AUTH_POLICIES_CHANGED_SUBJECT,
  STORED_POLICIES_TTL_MS,
  StoredPolicies,
} from "./stored-policies.ts";

const row = (name: string, extra: Record<string, unknown> = {}, isDefault = false): ForwardAuthPolicy =>
  create(ForwardAuthPolicySchema, {
    policyId: `fap_${name}`,
    isDefault,
    definitionJson: JSON.stringify({ name, apiId: "api_1", ...extra }),
  });

const noFile: PolicySource = { of: () => PolicySet.empty };

function storedWith(stored: Record<string, ForwardAuthPolicy[]>, file = noFile, maxBytes?: number) {
  const bus = new MemoryBus();
  const clock = new TestClock(1_000);
  const loads: string[] = [];
  const policies = new StoredPolicies(
    file,
    async (caller: Caller) => {
      loads.push(caller.workspaceId);
      return stored[caller.workspaceId] ?? [];
    },
    { bus, clock, log: createLogger("test", "silent"), ...(maxBytes ? { maxBytes } : {}) },
  );
  const changed = (workspaceId: string) =>
    bus.publish(
      FORWARD_AUTH_POLICIES_CHANGED_SUBJECT,
      toBinary(ForwardAuthPoliciesChangedSchema, create(ForwardAuthPoliciesChangedSchema, { workspaceId })),
    );
  return { policies, loads, changed, clock };
}

const nameOf = async (p: ReturnType<StoredPolicies["match"]>) => (await p)?.name;

describe("the gateway's stored forward-auth policies", () => {
  it("loads a workspace once for concurrent requests, then answers from memory without a promise", async () => {
    const { policies, loads } = storedWith({ ws_a: [row("orders", { paths: ["/orders/**"] })] });
    const a = callerOf("ws_a", "forward_auth.*.verify");
    const names = await Promise.all(
      Array.from({ length: 20 }, () => nameOf(policies.match(a, "GET", "h", "/orders/1"))),
    );
    expect(names).toEqual(Array(20).fill("orders"));
    expect(loads).toEqual(["ws_a"]);
    const hit = policies.match(a, "GET", "h", "/orders/2");
    expect(hit instanceof Promise).toBe(false);
    expect((hit as { name: string }).name).toBe("orders");
    expect(policies.match(a, "GET", "h", "/elsewhere")).toBeUndefined();
    expect(loads).toEqual(["ws_a"]);
  });

  it("drops a workspace's policies on the keys service's announcement, and the next request sees the change", async () => {
    const stored = { ws_a: [row("first")], ws_b: [row("b")] };
    const { policies, loads, changed } = storedWith(stored);
    const a = callerOf("ws_a", "*");
    const b = callerOf("ws_b", "*");
    expect(await nameOf(policies.match(a, "GET", "h", "/"))).toBe("first");
    expect(await nameOf(policies.match(b, "GET", "h", "/"))).toBe("b");
    stored.ws_a = [row("second")];
    changed("ws_a");
    expect(await nameOf(policies.match(a, "GET", "h", "/"))).toBe("second");
    // Another workspace's entry stayed.
    expect(await nameOf(policies.match(b, "GET", "h", "/"))).toBe("b");
    expect(loads).toEqual(["ws_a", "ws_b", "ws_a"]);
  });

  it("does not keep a load a change overtook", async () => {
    let release!: () => void;
    const bus = new MemoryBus();
    const loads: number[] = [];
    let version = 1;
    const policies = new StoredPolicies(
      noFile,
      async () => {
        const v = version;
        loads.push(v);
        if (v === 1) await new Promise<void>((r) => (release = r));
        return [row(`v${v}`)];
      },
      { bus, clock: new TestClock(0), log: createLogger("test", "silent") },
    );
    const a = callerOf("ws_a", "*");
    const first = nameOf(policies.match(a, "GET", "h", "/"));
    await Promise.resolve();
    version = 2;
    bus.publish(
      FORWARD_AUTH_POLICIES_CHANGED_SUBJECT,
      toBinary(
        ForwardAuthPoliciesChangedSchema,
        create(ForwardAuthPoliciesChangedSchema, { workspaceId: "ws_a" }),
      ),
    );
    release();
    expect(await first).toBe("v1");
    expect(await nameOf(policies.match(a, "GET", "h", "/"))).toBe("v2");
    expect(loads).toEqual([1, 2]);
  });

  it("asks again once its time runs out, without word from the bus", async () => {
    const { policies, loads, clock } = storedWith({ ws_a: [row("p")] });
    const a = callerOf("ws_a", "*");
    await nameOf(policies.match(a, "GET", "h", "/"));
    clock.advance(STORED_POLICIES_TTL_MS - 1);
    await nameOf(policies.match(a, "GET", "h", "/"));
    clock.advance(1);
    await nameOf(policies.match(a, "GET", "h", "/"));
    expect(loads).toEqual(["ws_a", "ws_a"]);
  });

  it("tries the file's policies first (no load when one matches), then the stored ones, then the file's default", async () => {
    const file = parsePolicies(
      "policies: [{ name: git, paths: ['/git/**'], apiId: api_f }]\ndefault: { name: file-default, apiId: api_f }",
      "test",
    );
    const { policies, loads } = storedWith(
      {
        ws_f: [row("api", { paths: ["/api/**"] }), row("stored-default", {}, true)],
        ws_g: [row("g-default", {}, true)],
      },
      { of: (ws) => (ws === "ws_f" ? file : PolicySet.empty) },
    );
    const f = callerOf("ws_f", "*");
    expect(await nameOf(policies.match(f, "GET", "h", "/git/x"))).toBe("git");
    expect(loads).toEqual([]);
    expect(await nameOf(policies.match(f, "GET", "h", "/api/x"))).toBe("api");
    expect(await nameOf(policies.match(f, "GET", "h", "/other"))).toBe("file-default");
    expect(await nameOf(policies.match(callerOf("ws_g", "*"), "GET", "h", "/other"))).toBe("g-default");
  });

  it("leaves out a stored policy its schema no longer accepts, keeping the rest", async () => {
    const { policies } = storedWith({ ws_a: [row("bad", { hosts: [42] }), row("good")] });
    expect(await nameOf(policies.match(callerOf("ws_a", "*"), "GET", "h", "/"))).toBe("good");
  });

  it("keeps a workspace's policies while another holds as many and as large as it may, and many workspaces come and go", async () => {
    const big = (ws: string) =>
      Array.from({ length: 100 }, (_, i) =>
        row(`${ws}${i}`, { paths: [`/p${i}/**`], tags: Array.from({ length: 10 }, () => "t".repeat(128)) }),
      );
    const stored: Record<string, ForwardAuthPolicy[]> = { ws_victim: [row("mine")], ws_attacker: big("a") };
    for (let i = 0; i < 50; i++) stored[`ws_churn${i}`] = [row(`c${i}`)];
    const { policies, loads, changed } = storedWith(stored, noFile, 2 * 1024 * 1024);
    const victim = callerOf("ws_victim", "*");
    expect(await nameOf(policies.match(victim, "GET", "h", "/"))).toBe("mine");
    const attacker = callerOf("ws_attacker", "*");
    for (let round = 0; round < 5; round++) {
      await nameOf(policies.match(attacker, "GET", "h", "/none"));
      changed("ws_attacker");
      expect(policies.match(victim, "GET", "h", "/")).toMatchObject({ name: "mine" });
    }
    for (let i = 0; i < 50; i++) await nameOf(policies.match(callerOf(`ws_churn${i}`, "*"), "GET", "h", "/"));
    expect(loads.filter((w) => w === "ws_victim")).toEqual(["ws_victim"]);
  });
});
