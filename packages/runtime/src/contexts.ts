import { env } from "./config.ts";

/**
 * Latchkey's bounded contexts, listed once: each is a Connect service in services/<name>, run as
 * a process of its own (services/<name>/src/main.ts, through runService) or inside npm start's one
 * process. Everything that lists the contexts reads this table: the service processes, the
 * gateway, npm start, the test stacks, the screenshot script and deploy/ (the bundles, the
 * manifests' checks). A new context is a row here; the places that compose contexts one by one
 * hold a Record<ContextName, …>, so the compiler names each of them.
 */
export interface Context {
  readonly name: ContextName;
  /** Its process's default PORT: Connect, gRPC and gRPC-Web, /healthz, /readyz and /metrics. */
  readonly port: number;
  /** The setting that tells its callers where it is: a URL, or several comma-separated (instances called in turn). */
  readonly urlSetting: string;
  /** The contexts its process calls: their URL settings are read at its start. */
  readonly calls: readonly ContextName[];
  /** Whether it keeps tables in PostgreSQL (DATABASE_URL, migrated at start under its name). */
  readonly postgres: boolean;
  /**
   * NATS (NATS_URL): `required`, or `optional` (without it changes reach only this process and no
   * events are recorded).
   */
  readonly nats: "required" | "optional";
  /** Its table of audit records (packages/runtime/src/audit.ts), pruned in the background, or none. */
  readonly auditTable: string | undefined;
  /** Its process's entrypoint, relative to the repository's root. */
  readonly entry: string;
}

export type ContextName = "keys" | "ratelimit" | "identity" | "analytics" | "webhooks" | "portal";

const context = (name: ContextName, c: Omit<Context, "name" | "entry">): Context => ({
  name,
  ...c,
  entry: `services/${name}/src/main.ts`,
});

/** Every context. */
export const CONTEXTS: { readonly [K in ContextName]: Context } = {
  keys: context("keys", {
    port: 7071,
    urlSetting: "KEYS_URL",
    calls: ["ratelimit", "identity"],
    postgres: true,
    nats: "optional",
    auditTable: "keys_audit_log",
  }),
  ratelimit: context("ratelimit", {
    port: 7072,
    urlSetting: "RATELIMIT_URL",
    calls: [],
    postgres: true,
    nats: "optional",
    auditTable: "ratelimit_audit_log",
  }),
  identity: context("identity", {
    port: 7073,
    urlSetting: "IDENTITY_URL",
    calls: [],
    postgres: true,
    nats: "optional",
    auditTable: "identity_audit_log",
  }),
  analytics: context("analytics", {
    port: 7074,
    urlSetting: "ANALYTICS_URL",
    calls: [],
    postgres: false,
    nats: "required",
    auditTable: undefined,
  }),
  webhooks: context("webhooks", {
    port: 7075,
    urlSetting: "WEBHOOKS_URL",
    calls: [],
    postgres: true,
    nats: "optional",
    auditTable: "webhooks_audit_log",
  }),
  portal: context("portal", {
    port: 7076,
    urlSetting: "PORTAL_URL",
    calls: ["keys", "analytics"],
    postgres: true,
    nats: "optional",
    auditTable: "portal_audit_log",
  }),
};

/** The contexts' names, in CONTEXTS' order. */
export const CONTEXT_NAMES = Object.keys(CONTEXTS) as readonly ContextName[];

/** The contexts in an order their processes can start in: each after the ones it calls. */
export function startOrder(): ContextName[] {
  const order: ContextName[] = [];
  const visit = (name: ContextName, path: readonly ContextName[]) => {
    if (order.includes(name)) return;
    if (path.includes(name)) throw new Error(`contexts.ts: ${[...path, name].join(" -> ")} call each other`);
    for (const callee of CONTEXTS[name].calls) visit(callee, [...path, name]);
    order.push(name);
  };
  for (const name of CONTEXT_NAMES) visit(name, []);
  return order;
}

/** The gateway's process: not a context, but listed beside them wherever processes are. */
export const GATEWAY_PROCESS = {
  name: "gateway",
  entry: "gateway/src/main.ts",
  /** Its public port (PORT), which npm start's one process uses too. */
  port: 7070,
  /** Where Prometheus scrapes it (METRICS_PORT): the public port serves no /metrics. */
  metricsPort: 9464,
} as const;

/** One setting the bootstrap reads for a context, as the table above decides it. */
export interface Setting {
  name: string;
  kind: "string" | "int";
  /** The process refuses to start without it (env.required). */
  required?: boolean;
  /** Its value when unset. */
  fallback?: string | number;
  /** The least an int may be. */
  min?: number;
}

/** Audit records older than this many days are pruned (AUDIT_RETENTION_DAYS). */
const AUDIT_RETENTION_DAYS = 365;

/** Where a context is when its URL setting is unset: this machine, on its default port. */
export const defaultUrlOf = (name: ContextName) => `http://127.0.0.1:${CONTEXTS[name].port}`;

const urlSettingOf = (name: ContextName): Setting => ({
  name: CONTEXTS[name].urlSetting,
  kind: "string",
  fallback: defaultUrlOf(name),
});

/**
 * Every setting runService reads for `name` beyond the context's own: exactly these, read through
 * this list (readSetting), so deploy/env-reads.ts can add them to what a bundle that calls
 * runService("<name>", …) reads.
 */
export function contextSettings(name: ContextName): Setting[] {
  const c = CONTEXTS[name];
  return [
    { name: "PORT", kind: "int", fallback: c.port },
    ...(c.postgres ? [{ name: "DATABASE_URL", kind: "string", required: true } as const] : []),
    ...(c.auditTable
      ? [{ name: "AUDIT_RETENTION_DAYS", kind: "int", fallback: AUDIT_RETENTION_DAYS, min: 1 } as const]
      : []),
    { name: "NATS_URL", kind: "string", required: c.nats === "required" },
    ...c.calls.map(urlSettingOf),
  ];
}

/** The URL setting of every context: what the gateway reads (contextUrls). */
export const contextUrlSettings = (): Setting[] => CONTEXT_NAMES.map(urlSettingOf);

/** A setting's value, through the config helpers (config.ts), so a bad one throws naming it. */
export function readSetting(s: Setting): string | number | undefined {
  if (s.required) return env.required(s.name);
  if (s.kind === "int") return env.int(s.name, Number(s.fallback), s.min);
  return env.string(s.name, s.fallback === undefined ? undefined : String(s.fallback));
}

/** Where each context is (its URL setting, or this machine's default port): the gateway's calls. */
export function contextUrls(): Record<ContextName, string> {
  return Object.fromEntries(
    CONTEXT_NAMES.map((name) => [name, readSetting(urlSettingOf(name)) as string]),
  ) as Record<ContextName, string>;
}
