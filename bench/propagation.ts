import { createClient } from "@connectrpc/connect";
import { CreditsOperation, KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { internalTransport } from "@latchkey/runtime";
import { internalAuth, type Proc, type Stack, startStack } from "../test/testing/process-stack.ts";
import { startRatelimitReplicas } from "./replicas.ts";

/** Changes measured per kind: at least 200, so the p99 rests on two changes or more. */
const CHANGES = Number(process.env["CHANGES"] ?? 200);
/** A change not seen everywhere by then counts as a timeout, and the run goes on. */
const TIMEOUT_MS = Number(process.env["PROPAGATION_TIMEOUT_MS"] ?? 2_000);
const TARGET_P99_MS = 100;

/** What each instance is asked as: the default workspace, every permission. */
const caller = { workspaceId: "ws_default", permissions: ["*"] };

interface Kind {
  name: string;
  /** Milliseconds from the change's answer until every instance answered the new state; null for a timeout. */
  samples: (number | null)[];
}

/**
 * Asks every probe in a tight loop (each its own loop, concurrently) until it
 * answers true, and answers the time at which the LAST one did, from `from`.
 */
async function everywhere(probes: (() => Promise<boolean>)[], from: number): Promise<number | null> {
  const seen = await Promise.all(
    probes.map(async (probe) => {
      while (!(await probe())) {
        if (performance.now() - from > TIMEOUT_MS) return null;
      }
      return performance.now() - from;
    }),
  );
  return seen.includes(null) ? null : Math.max(...(seen as number[]));
}

/** Runs `change`, then times how long until every probe sees its effect. */
async function timed(
  change: () => Promise<void>,
  probes: (() => Promise<boolean>)[],
): Promise<number | null> {
  await change();
  return everywhere(probes, performance.now());
}

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

function kindRow(kind: Kind): string {
  const ok = kind.samples.filter((s): s is number => s !== null).sort((a, b) => a - b);
  const timeouts = kind.samples.length - ok.length;
  const p99 = quantile(ok, 0.99);
  const verdict = timeouts === 0 && p99 < TARGET_P99_MS ? "yes" : "no";
  const ms = (n: number) => n.toFixed(1).padStart(6);
  return `| ${kind.name.padEnd(64)} | ${String(kind.samples.length).padStart(7)} | ${ms(quantile(ok, 0.5))} | ${ms(
    p99,
  )} | ${ms(ok.at(-1) ?? Number.NaN)} | ${String(timeouts).padStart(8)} | ${verdict.padStart(9)} |`;
}

/**
 * A public operation through the gateway when the gateway serves it (a served
 * route answers 400 to an empty body, an unknown one 404); otherwise the same
 * change over Connect on the first keys instance, and the table says so.
 */
async function through(stack: Stack, operation: string): Promise<"gateway" | "rpc"> {
  return (await stack.call(operation, {})).status === 404 ? "rpc" : "gateway";
}

async function ok(call: Promise<{ status: number; body: unknown }>, what: string) {
  const res = await call;
  if (res.status !== 200) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.body)}`);
}

/**
 * `npm run bench` (BENCH=propagation): how long a change takes to reach every
 * instance, with two keys-service instances and two ratelimit replicas on one
 * PostgreSQL and NATS. For each of CHANGES changes per kind, the clock starts
 * at the change's answer and stops when every instance, polled directly over
 * Connect in a tight loop, answers the new state. The undoing change of each
 * round (re-enabling, deleting the override) is timed too. Target: p99 < 100 ms.
 */
export async function propagation(): Promise<void> {
  const natsUrl = process.env["NATS_URL"] || "nats://127.0.0.1:4222";
  const stack = await startStack({ keysInstances: 2, natsUrl });
  let replicas: Proc[] = [];
  try {
    replicas = await startRatelimitReplicas(stack.db.url, natsUrl, 2);
    const keysClients = stack.keys.map((k) =>
      createClient(KeysService, internalTransport(k.url, { auth: internalAuth })),
    );
    const ratelimitClients = replicas.map((r) =>
      createClient(RatelimitService, internalTransport(r.url, { auth: internalAuth })),
    );
    const writer = keysClients[0]!;
    let phase = performance.now();
    const progress = (what: string) => {
      process.stderr.write(`  ${what}: ${((performance.now() - phase) / 1000).toFixed(1)} s\n`);
      phase = performance.now();
    };
    process.stderr.write(
      `propagation (${CHANGES} changes per kind; ${stack.keys.length} keys instances, ${replicas.length} ratelimit replicas, NATS ${natsUrl})\n`,
    );

    const apiId = (await stack.call("apis.createApi", { name: "propagation" })).body.data.apiId as string;
    const createKey = async (extra: Record<string, unknown>) => {
      const created = await stack.call("keys.createKey", { apiId, ...extra });
      if (created.status !== 200) throw new Error(`createKey answered ${created.status}`);
      return created.body.data as { key: string; keyId: string };
    };
    // Cost 0 reads the state without spending, so polling changes nothing.
    const verifyOn = (i: number, key: string) =>
      keysClients[i]!.verifyKey({ caller, key, cost: 0n, requestId: "bench_propagation" });

    // Revocation: disable, then re-enable, one key, CHANGES rounds.
    const revoked = await createKey({});
    const updateKeyVia = await through(stack, "keys.updateKey");
    const setEnabled = (enabled: boolean) => async () => {
      if (updateKeyVia === "gateway")
        await ok(stack.call("keys.updateKey", { keyId: revoked.keyId, enabled }), "keys.updateKey");
      else await writer.updateKey({ caller, keyId: revoked.keyId, enabled });
    };
    const codeEverywhere = (code: VerifyCode) =>
      keysClients.map((_, i) => async () => (await verifyOn(i, revoked.key)).code === code);
    const disable: Kind = { name: `revoke: keys.updateKey enabled:false (${updateKeyVia})`, samples: [] };
    const enable: Kind = { name: `undo: keys.updateKey enabled:true (${updateKeyVia})`, samples: [] };
    // Both instances hold the key in their caches before the first change.
    await everywhere(codeEverywhere(VerifyCode.VALID), performance.now());
    // The resolution of every figure below: one poll of every instance, with nothing to wait for.
    const floor: Kind = { name: "floor: no change, one poll of each instance", samples: [] };
    for (let i = 0; i < CHANGES; i++)
      floor.samples.push(await everywhere(codeEverywhere(VerifyCode.VALID), performance.now()));
    for (let i = 0; i < CHANGES; i++) {
      disable.samples.push(await timed(setEnabled(false), codeEverywhere(VerifyCode.DISABLED)));
      enable.samples.push(await timed(setEnabled(true), codeEverywhere(VerifyCode.VALID)));
    }
    progress("revocation by disabling");

    // Deletion: a fresh key per change, cached on both instances first.
    const deleteKeyVia = await through(stack, "keys.deleteKey");
    const deleted: Kind = { name: `revoke: keys.deleteKey (${deleteKeyVia})`, samples: [] };
    for (let i = 0; i < CHANGES; i++) {
      const { key, keyId } = await createKey({});
      const codes = (code: VerifyCode) =>
        keysClients.map((_, j) => async () => (await verifyOn(j, key)).code === code);
      await everywhere(codes(VerifyCode.VALID), performance.now());
      deleted.samples.push(
        await timed(async () => {
          if (deleteKeyVia === "gateway") await ok(stack.call("keys.deleteKey", { keyId }), "keys.deleteKey");
          else await writer.deleteKey({ caller, keyId });
        }, codes(VerifyCode.NOT_FOUND)),
      );
    }
    progress("revocation by deletion");

    // Credits: set a new balance each round.
    const funded = await createKey({ credits: { remaining: 1_000_000 } });
    const updateCreditsVia = await through(stack, "keys.updateCredits");
    const credits: Kind = { name: `keys.updateCredits set (${updateCreditsVia})`, samples: [] };
    for (let i = 0; i < CHANGES; i++) {
      const value = 1_000 + i;
      credits.samples.push(
        await timed(
          async () => {
            if (updateCreditsVia === "gateway")
              await ok(
                stack.call("keys.updateCredits", { keyId: funded.keyId, operation: "set", value }),
                "keys.updateCredits",
              );
            else
              await writer.updateCredits({
                caller,
                keyId: funded.keyId,
                operation: CreditsOperation.SET,
                value: BigInt(value),
              });
          },
          keysClients.map((_, j) => async () => (await verifyOn(j, funded.key)).credits === BigInt(value)),
        ),
      );
    }
    progress("credits");

    // Overrides: ban one identifier (limit 0), then delete the override.
    const check = {
      namespace: "bench_propagation",
      identifier: "user_1",
      limit: 1_000_000_000n,
      duration: 60_000n,
    };
    await ok(
      stack.call("ratelimits.limit", { ...check, limit: 1_000_000_000, duration: 60_000 }),
      "ratelimits.limit (creates the namespace)",
    );
    const limitOn = (i: number) => ratelimitClients[i]!.limit({ caller, check: { ...check, cost: 0n } });
    const successEverywhere = (success: boolean) =>
      ratelimitClients.map((_, i) => async () => (await limitOn(i)).result?.success === success);
    const override = { namespace: check.namespace, identifier: check.identifier };
    const ban: Kind = { name: "ratelimits.setOverride limit 0 (gateway)", samples: [] };
    const unban: Kind = { name: "undo: ratelimits.deleteOverride (gateway)", samples: [] };
    await everywhere(successEverywhere(true), performance.now());
    for (let i = 0; i < CHANGES; i++) {
      ban.samples.push(
        await timed(
          () =>
            ok(
              stack.call("ratelimits.setOverride", { ...override, limit: 0, duration: 60_000 }),
              "setOverride",
            ),
          successEverywhere(false),
        ),
      );
      unban.samples.push(
        await timed(
          () => ok(stack.call("ratelimits.deleteOverride", override), "deleteOverride"),
          successEverywhere(true),
        ),
      );
    }
    progress("overrides");

    const lines = [
      "",
      `| ${"change reaches every instance (2 keys, 2 ratelimit)".padEnd(64)} | changes | p50 ms | p99 ms | max ms | timeouts | p99 < ${TARGET_P99_MS} |`,
      `|${"-".repeat(66)}|---------|--------|--------|--------|----------|-----------|`,
      ...[disable, deleted, credits, ban, enable, unban, floor].map(kindRow),
      "",
      `from the change's answer until every instance, polled over Connect, answers the new state; timeout ${TIMEOUT_MS} ms.`,
      "(gateway): the change went through the gateway over HTTP; (rpc): the gateway has no such route yet, so over Connect to one keys instance.",
      "",
    ];
    process.stdout.write(lines.join("\n"));
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    await stack.stop();
  }
}
