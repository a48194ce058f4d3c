import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import {
  clientHeader,
  EVENT_TYPES,
  everyMs,
  fromSoak,
  loop,
  pace,
  Recorder,
  type Sample,
} from "./soak-client.ts";

/**
 * The attacker of `npm run soak` (bench/soak.ts), in a process of its own: a workspace doing the
 * worst each of its limits allows, at rates the soak sets (modest: the machine has two cores; the
 * point is whether the victim is still served, not how much the attacker can send).
 *
 * - Webhooks: as many as a workspace may have (created until 412), for every event type, half to a
 *   receiver that answers just under the delivery timeout, half to one that fails at once; the ones
 *   Latchkey disables after their run of failures are enabled again. Events to feed them: a
 *   ratelimit.exceeded a second per hot identifier, and keys and identities created and deleted.
 * - The largest bodies: keys and identities with 100-property meta of 64 KiB, 255-character names
 *   and external ids; a key with such meta verified again and again (every answer carries it).
 * - New rate-limit counters at its counter budget: `ratelimits.multiLimit` of 100 checks, each a new
 *   512-character identifier under a 512-character namespace, for an hour, so each one stays live.
 * - Floods from processes of their own (bench/authflood-client.ts): distinct bogus root keys of a
 *   real one's shape, each a lookup, and random key strings with its valid root key, each a
 *   key-cache miss.
 * - Analytics: the heaviest query it may run, a self-join of its own verifications that runs to the
 *   time or memory limit, `queryConcurrency` at once, back to back.
 */
export interface AttackerConfig {
  url: string;
  rootKey: string;
  webhookTimeoutMs: number;
  /** New rate-limit counters a second (in multiLimit requests of 100). */
  counterRate: number;
  /** Events a second it causes through denied hot identifiers. */
  eventRate: number;
  manageRate: number;
  fatVerifyRate: number;
  queryConcurrency: number;
  rootFloodRate: number;
  keyFloodRate: number;
  reenableEveryS: number;
}

export interface AttackerReport {
  samples: Sample[];
  errors: [string, number][];
  webhooks: { slow: number; failing: number };
  reenabled: number;
  /** The first multiLimit of new counters refused (its counters full), unix ms; undefined: never. */
  budgetReachedAt?: number;
  countersAsked: number;
  countersGranted: number;
  floods: Record<
    string,
    { sent: number; skipped: number; seconds: number; statuses: Record<string, number> }
  >;
  slowAnswered: number;
  failingAnswered: number;
}

const config = JSON.parse(process.env["SOAK_WORKER"]!) as AttackerConfig;
const soak = fromSoak();
const rec = new Recorder();
const { url, rootKey } = config;

let slowAnswered = 0;
let failingAnswered = 0;
const servers: Server[] = [];
async function receiver(answer: (res: import("node:http").ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => answer(res));
  });
  // Its sockets must not keep the process alive, nor a slow answer the close.
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const slowUrl = await receiver((res) => {
  setTimeout(() => {
    slowAnswered++;
    res.writeHead(200).end();
  }, config.webhookTimeoutMs - 500).unref();
});
const failingUrl = await receiver((res) => {
  failingAnswered++;
  res.writeHead(500).end("no");
});

const setupCall = async (op: string, body: unknown) => {
  const res = await fetch(`${url}/v2/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}`, ...clientHeader },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

/** 100 properties, as large as meta may be (64 KiB of JSON, gateway/src/limits.ts). */
function fatMeta(): Record<string, string> {
  const meta: Record<string, string> = {};
  for (let i = 0; i < 100; i++) meta[`p${String(i).padStart(2, "0")}`] = "";
  const room = 64 * 1024 - Buffer.byteLength(JSON.stringify(meta));
  const each = Math.floor(room / 100);
  for (const k of Object.keys(meta)) meta[k] = randomBytes(each).toString("base64url").slice(0, each);
  return meta;
}
const long = (prefix: string, n: number) => (prefix + "x".repeat(n)).slice(0, n);

const api = await setupCall("apis.createApi", { name: "soak-attacker" });
if (api.status !== 200) throw new Error(`attacker setup: ${JSON.stringify(api.body)}`);
const apiId = api.body.data.apiId as string;
const fat = await setupCall("keys.createKey", {
  apiId,
  name: long("fat-", 255),
  externalId: long("fat_", 255),
  meta: fatMeta(),
  credits: { remaining: 1_000_000_000 },
  ratelimits: [{ name: "requests", limit: 1_000_000, duration: 60_000, autoApply: true }],
});
if (fat.status !== 200) throw new Error(`attacker setup: ${JSON.stringify(fat.body)}`);
const fatKey = fat.body.data.key as string;

// Webhooks until the workspace may have no more (412), alternating slow and failing.
const webhooks = { slow: 0, failing: 0 };
for (let i = 0; i < 1_000; i++) {
  const slow = i % 2 === 0;
  const res = await setupCall("webhooks.create", {
    url: `${slow ? slowUrl : failingUrl}/${i}/${"h".repeat(1_500)}`,
    events: EVENT_TYPES,
    description: long("attacker ", 255),
  });
  if (res.status === 412) break;
  if (res.status !== 200) throw new Error(`attacker setup: webhooks.create ${JSON.stringify(res.body)}`);
  webhooks[slow ? "slow" : "failing"]++;
}
const namespace = long("attacker-namespace-", 512);
soak.send({ type: "ready", apiId, webhooks });

await soak.next("attack");

const flooders: { name: string; child: ChildProcess; out: string }[] = [];
function flood(name: string, env: Record<string, string>, rate: number) {
  if (rate <= 0) return;
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "authflood-client.ts")],
    {
      env: { ...process.env, URL: `${url}/v2/keys.verifyKey`, RATE: String(rate), ...env },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const f = { name, child, out: "" };
  child.stdout!.on("data", (d) => {
    f.out += d;
  });
  flooders.push(f);
}
// However this process ends (the soak gone included), its floods end with it.
process.on("exit", () => {
  for (const f of flooders) f.child.kill("SIGKILL");
});
flood("bogus root keys", { FLOOD: "distinct" }, config.rootFloodRate);
flood("random key strings", { FLOOD: "keys", AUTH: rootKey }, config.keyFloodRate);

// New counters: each identifier once, 512 characters, live for an hour.
let countersAsked = 0;
let countersGranted = 0;
let budgetReachedAt: number | undefined;
const counters = pace(config.counterRate / 100, async () => {
  const base = countersAsked;
  countersAsked += 100;
  const checks = Array.from({ length: 100 }, (_, i) => ({
    namespace,
    identifier: long(`${base + i}-${randomBytes(8).toString("hex")}-`, 512),
    limit: 1_000,
    duration: 3_600_000,
  }));
  const a = await rec.call(url, rootKey, "ratelimits.multiLimit", checks, {
    label: "ratelimits.multiLimit (new)",
  });
  if (a.status !== 200) return;
  if (a.body.data.passed) countersGranted += 100;
  else budgetReachedAt ??= a.t;
});

// Hot identifiers at limit 1 a second: each is denied within its window, one event each.
const hot = Math.max(1, Math.round(config.eventRate));
let hotAsked = 0;
const hotLimiter = pace(config.eventRate * 2, () =>
  rec.call(url, rootKey, "ratelimits.limit", {
    namespace,
    identifier: `hot_${hotAsked++ % hot}`,
    limit: 1,
    duration: 1_000,
  }),
);

const fatVerifier = pace(config.fatVerifyRate, () =>
  rec.call(url, rootKey, "keys.verifyKey", { key: fatKey }, { label: "keys.verifyKey (64 KiB meta)" }),
);

let made = 0;
const manager = loop(async () => {
  const n = made++;
  const k = await rec.call(url, rootKey, "keys.createKey", {
    apiId,
    name: long(`k${n}-`, 255),
    externalId: long(`e${n}_`, 255),
    meta: fatMeta(),
  });
  if (k.status === 200) await rec.call(url, rootKey, "keys.deleteKey", { keyId: k.body.data.keyId });
  const i = await rec.call(url, rootKey, "identities.createIdentity", {
    externalId: long(`i${n}_${Date.now()}_`, 255),
    meta: fatMeta(),
  });
  if (i.status === 200)
    await rec.call(url, rootKey, "identities.deleteIdentity", { identity: i.body.data.identityId });
}, 4_000 / config.manageRate);

const HEAVY =
  "SELECT count() AS n FROM key_verifications_v1 AS a JOIN key_verifications_v1 AS b ON a.outcome = b.outcome";
const analysts = Array.from({ length: config.queryConcurrency }, () =>
  loop(
    () =>
      rec.call(
        url,
        rootKey,
        "analytics.getVerifications",
        { query: HEAVY },
        { timeoutMs: 60_000, label: "analytics (heavy SQL)" },
      ),
    // Back to back, with a breath between so that a refusal (429, 503) is not a busy loop.
    100,
  ),
);

let reenabled = 0;
const reenabler = loop(async () => {
  const list = await rec.call(url, rootKey, "webhooks.list", { limit: 100 });
  if (list.status !== 200) return;
  for (const w of list.body.data as { webhookId: string; enabled: boolean }[]) {
    if (w.enabled) continue;
    const u = await rec.call(url, rootKey, "webhooks.update", { webhookId: w.webhookId, enabled: true });
    if (u.status === 200) reenabled++;
  }
}, everyMs(config.reenableEveryS));

await soak.next("stop");
const floods: AttackerReport["floods"] = {};
await Promise.all(
  flooders.map(
    (f) =>
      new Promise<void>((resolve) => {
        f.child.once("exit", () => {
          try {
            floods[f.name] = JSON.parse(f.out.trim().split("\n").at(-1) ?? "");
          } catch {}
          resolve();
        });
        f.child.kill("SIGTERM");
      }),
  ),
);
await Promise.all([
  counters.stop(),
  hotLimiter.stop(),
  fatVerifier.stop(),
  manager.stop(),
  reenabler.stop(),
  ...analysts.map((a) => a.stop()),
]);

// Its receivers keep answering as they did while the victim's last events drain.
await soak.next("report");
const report: AttackerReport = {
  samples: rec.samples,
  errors: rec.errors(),
  webhooks,
  reenabled,
  ...(budgetReachedAt === undefined ? {} : { budgetReachedAt }),
  countersAsked,
  countersGranted,
  floods,
  slowAnswered,
  failingAnswered,
};
soak.send({ type: "report", report });
await soak.next("exit");
