import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
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
 * The victim of `npm run soak` (bench/soak.ts), in a process of its own so that nothing else the soak
 * does sits in its latencies: a steady mix for the whole run, at rates the soak sets. Verifications
 * of keys with credits and an autoApply limit; `ratelimits.limit` on a few identifiers, some denied;
 * management (keys created, updated, deleted; identities created, deleted; a key spent to its last
 * credit); analytics queries, structured and SQL; and a webhook for every event type to a healthy
 * receiver this process runs, which notes when each event arrives. Management and analytics use a
 * root key new to Latchkey every `rotateEveryS`, as a client rotating its root keys does.
 *
 * Every event the victim causes is expected at its receiver: key.created/updated/deleted and
 * identity.created/deleted by id, ratelimit.exceeded by identifier and window (its first denial's
 * answer says the window), credits.low and credits.exhausted by key. A request answered 5xx, or not
 * at all, may or may not have happened: its event is not expected (one that arrives is counted as
 * unexpected), and a verification so answered is counted apart from those analytics must count.
 */
export interface VictimConfig {
  url: string;
  rootKey: string;
  /** Root keys of the victim's workspace Latchkey has not seen yet, one per rotation. */
  rotatedRootKeys: string[];
  rotateEveryS: number;
  verifyRate: number;
  limitRate: number;
  manageRate: number;
  analyticsEveryS: number;
  keys: number;
  /** How long to wait, after the load stops, for the events still expected. */
  drainS: number;
}

/** What the victim hands the soak at the end. */
export interface VictimReport {
  samples: Sample[];
  /** Verifications answered 200, by outcome code: what analytics must count, exactly. */
  verified: Record<string, number>;
  /** Verifications answered 5xx or not at all: they may or may not be in analytics. */
  verifyUnanswered: number;
  /** Each expected event: what caused it, when (unix ms), and when it arrived (undefined: never). */
  expected: { event: string; op: string; t: number; arrived?: number }[];
  /** Events that arrived but were not expected (caused by a request answered 5xx, or during setup). */
  unexpected: number;
  /** The first few of them, as type|id. */
  unexpectedSome: string[];
  /** Arrivals of an event already received (at-least-once delivery). */
  repeats: number;
  errors: [string, number][];
  failedIds: Record<string, string[]>;
  skipped: number;
  apiId: string;
  /** Its webhook's deliveries still pending after the drain (webhooks.listDeliveries), and the oldest's age. */
  pending: { count: number; oldestS?: number; error?: string };
}

const config = JSON.parse(process.env["SOAK_WORKER"]!) as VictimConfig;
const soak = fromSoak();
const rec = new Recorder();
const { url } = config;

// The receiver: every event it gets, by the key the victim expects it under.
const arrivals = new Map<string, number>();
let repeats = 0;
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const at = Date.now();
    res.writeHead(204).end();
    try {
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const key = eventKey(event.type, event.data);
      if (arrivals.has(key)) repeats++;
      else arrivals.set(key, at);
    } catch {}
  });
});
await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

/** The key an event is expected under: its type and what identifies it. */
function eventKey(type: string, data: any): string {
  if (type === "ratelimit.exceeded") return `${type}|${data.identifier}|${data.windowStart}`;
  if (type.startsWith("identity.")) return `${type}|${data.identityId}`;
  return `${type}|${data.keyId}`;
}

const expected = new Map<string, { op: string; t: number }>();
const expect = (key: string, op: string, t: number) => {
  if (!expected.has(key)) expected.set(key, { op, t });
};

// Setup, with the first root key: nothing here is measured.
const setupCall = async (op: string, body: unknown) => {
  const res = await fetch(`${url}/v2/${op}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${config.rootKey}`,
      ...clientHeader,
    },
    body: JSON.stringify(body),
  });
  const parsed = (await res.json()) as any;
  if (res.status !== 200)
    throw new Error(`victim setup: ${op} answered ${res.status}: ${JSON.stringify(parsed)}`);
  return parsed.data;
};
const { apiId } = await setupCall("apis.createApi", { name: "soak-victim" });
const keys: string[] = [];
// Their key.created may still reach the webhook made after them (intake matches an event to the
// webhooks there are when it takes it): setup, neither expected nor unexpected.
const setupKeys = new Set<string>();
for (let i = 0; i < config.keys; i++) {
  const { key, keyId } = await setupCall("keys.createKey", {
    apiId,
    name: `victim-${i}`,
    meta: { plan: "pro", seat: i },
    credits: { remaining: 1_000_000_000 },
    ratelimits: [{ name: "requests", limit: 1_000_000, duration: 60_000, autoApply: true }],
  });
  keys.push(key);
  setupKeys.add(`key.created|${keyId}`);
}
await setupCall("webhooks.create", { url: receiverUrl, events: EVENT_TYPES, description: "soak victim" });
await setupCall("ratelimits.limit", {
  namespace: "soak-victim",
  identifier: "setup",
  limit: 10,
  duration: 10_000,
});
soak.send({ type: "ready", apiId });

const started = Date.now();
/** The root key of management and analytics: a new one every rotateEveryS (0: always the first). */
const managementKey = () => {
  if (config.rotateEveryS <= 0) return config.rootKey;
  const i = Math.floor((Date.now() - started) / (config.rotateEveryS * 1000));
  return config.rotatedRootKeys[Math.min(i, config.rotatedRootKeys.length - 1)] ?? config.rootKey;
};

const verified: Record<string, number> = {};
let verifyUnanswered = 0;
async function verify(key: string) {
  const a = await rec.call(url, config.rootKey, "keys.verifyKey", { key, tags: ["soak"] });
  if (a.status === 200) {
    const code = String(a.body?.data?.code);
    verified[code] = (verified[code] ?? 0) + 1;
  } else if (a.status === 0 || a.status >= 500) verifyUnanswered++;
  return a;
}

let next = 0;
const verifier = pace(config.verifyRate, () => verify(keys[next++ % keys.length]!));

// Ten a window per identifier, and each identifier asked more often than that: some denials every window.
const LIMIT = 10;
const DURATION = 10_000;
const identifiers = Math.max(1, Math.floor((config.limitRate * DURATION) / 1000 / (LIMIT * 2)));
let asked = 0;
const limiter = pace(config.limitRate, async () => {
  const identifier = `user_${asked++ % identifiers}`;
  const a = await rec.call(url, config.rootKey, "ratelimits.limit", {
    namespace: "soak-victim",
    identifier,
    limit: LIMIT,
    duration: DURATION,
  });
  if (a.status === 200 && a.body.data.success === false) {
    expect(`ratelimit.exceeded|${identifier}|${a.body.data.reset - DURATION}`, "ratelimits.limit", a.t);
  }
});

// Management, one operation at a time.
const live: string[] = [];
let made = 0;
const steps: (() => Promise<unknown>)[] = [
  async () => {
    const a = await rec.call(url, managementKey(), "keys.createKey", {
      apiId,
      name: `managed-${made++}`,
      meta: { team: "soak", n: made },
      credits: { remaining: 100 },
    });
    if (a.status === 200) {
      expect(`key.created|${a.body.data.keyId}`, "keys.createKey", a.t);
      live.push(a.body.data.keyId);
    }
  },
  async () => {
    const keyId = live[0];
    if (keyId === undefined) return;
    const a = await rec.call(url, managementKey(), "keys.updateKey", {
      keyId,
      name: `renamed-${made}`,
      meta: { team: "soak", renamed: true },
    });
    if (a.status === 200) expect(`key.updated|${keyId}`, "keys.updateKey", a.t);
    else if (a.status === 0 || a.status >= 500) live.shift();
  },
  async () => {
    const keyId = live.shift();
    if (keyId === undefined) return;
    const a = await rec.call(url, managementKey(), "keys.deleteKey", { keyId });
    if (a.status === 200) expect(`key.deleted|${keyId}`, "keys.deleteKey", a.t);
  },
  async () => {
    const externalId = `victim_${made++}_${Date.now()}`;
    const a = await rec.call(url, managementKey(), "identities.createIdentity", {
      externalId,
      meta: { plan: "pro" },
    });
    if (a.status !== 200) return;
    const identityId = a.body.data.identityId as string;
    expect(`identity.created|${identityId}`, "identities.createIdentity", a.t);
    const d = await rec.call(url, managementKey(), "identities.deleteIdentity", { identity: identityId });
    if (d.status === 200) expect(`identity.deleted|${identityId}`, "identities.deleteIdentity", d.t);
  },
  // A key of 20 credits spent to the last: credits.low below ceil(20 × 0.1) = 2, then credits.exhausted.
  async () => {
    const a = await rec.call(url, managementKey(), "keys.createKey", {
      apiId,
      name: `credits-${made++}`,
      credits: { remaining: 20 },
    });
    if (a.status !== 200) return;
    expect(`key.created|${a.body.data.keyId}`, "keys.createKey", a.t);
    const keyId = a.body.data.keyId as string;
    const found: { low?: number; exhausted?: number } = {};
    for (let i = 0; i < 21; i++) {
      const v = await verify(a.body.data.key);
      // An unanswered spend may or may not have happened: this key's events are then not predictable.
      if (v.status !== 200) return;
      const left = v.body.data.credits as number | undefined;
      if (left !== undefined && left < 2 && found.low === undefined) found.low = v.t;
      if (left === 0 && v.body.data.code === "VALID" && found.exhausted === undefined) found.exhausted = v.t;
    }
    if (found.low !== undefined) expect(`credits.low|${keyId}`, "keys.verifyKey (credits)", found.low);
    if (found.exhausted !== undefined)
      expect(`credits.exhausted|${keyId}`, "keys.verifyKey (credits)", found.exhausted);
  },
];
let step = 0;
const manager = loop(() => steps[step++ % steps.length]!(), 1000 / config.manageRate);

let structured = false;
const analyst = loop(async () => {
  structured = !structured;
  const now = Date.now();
  await rec.call(
    url,
    managementKey(),
    "analytics.getVerifications",
    structured
      ? { start: now - 3_600_000, end: now + 60_000, granularity: "hour", groupBy: "outcome" }
      : {
          query:
            "SELECT outcome, count() AS total FROM key_verifications_v1 GROUP BY outcome ORDER BY outcome",
        },
    { timeoutMs: 40_000, label: structured ? "analytics (structured)" : "analytics (SQL)" },
  );
}, everyMs(config.analyticsEveryS));

await soak.next("stop");
await Promise.all([verifier.stop(), limiter.stop(), manager.stop(), analyst.stop()]);

const reportAsked = (await soak.next("report")) as { drainS?: number };
// The events still expected get drainS to arrive (the load has stopped by now).
const deadline = Date.now() + (reportAsked.drainS ?? config.drainS) * 1000;
while (Date.now() < deadline && [...expected.keys()].some((k) => !arrivals.has(k))) {
  await new Promise((r) => setTimeout(r, 250));
}
// Where the ones that never arrived are: still pending in Latchkey's outbox, or gone.
const pending: VictimReport["pending"] = { count: 0 };
try {
  const hooks = await setupCall("webhooks.list", { limit: 100 });
  const webhookId = hooks[0].webhookId as string;
  let cursor: string | undefined;
  for (let page = 0; page < 50; page++) {
    const res = await fetch(`${url}/v2/webhooks.listDeliveries`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${config.rootKey}`,
        ...clientHeader,
      },
      body: JSON.stringify({ webhookId, status: "pending", limit: 100, ...(cursor ? { cursor } : {}) }),
    });
    const body = (await res.json()) as any;
    for (const d of body.data as { createdAt: number }[]) {
      pending.count++;
      const age = (Date.now() - d.createdAt) / 1000;
      pending.oldestS = Math.max(pending.oldestS ?? 0, age);
    }
    cursor = body.pagination?.hasMore ? body.pagination.cursor : undefined;
    if (!cursor) break;
  }
} catch (err) {
  pending.error = String(err);
}
const unexpected = [...arrivals.keys()].filter((k) => !expected.has(k) && !setupKeys.has(k));
const report: VictimReport = {
  samples: rec.samples,
  verified,
  verifyUnanswered,
  expected: [...expected.entries()].map(([event, e]) => ({ event, ...e, arrived: arrivals.get(event) })),
  unexpected: unexpected.length,
  unexpectedSome: unexpected.slice(0, 5),
  repeats,
  errors: rec.errors(),
  failedIds: rec.failedIds,
  skipped: verifier.skipped() + limiter.skipped(),
  apiId,
  pending,
};
soak.send({ type: "report", report });
await soak.next("exit");
