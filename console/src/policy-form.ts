/**
 * A forward-auth policy as the Policies page's form holds it, and back: the policy file's entry
 * (gateway/src/forward-auth/policy.ts, docs/edge.md), whose bounds and rules the form checks before
 * sending, so that a mistake is named at its field; the API checks them all again.
 */

/** Where a policy reads the client's key. */
export type KeyFrom = "bearer" | "header" | "query" | "cookie";

/** A policy's definition as forwardAuth.getPolicy answers it and createPolicy takes it. */
export interface PolicyDefinition {
  name: string;
  apiId: string;
  hosts?: string[];
  paths?: string[];
  methods?: string[];
  key?: { from: KeyFrom; name?: string };
  permissions?: string;
  cost?: number;
  ratelimits?: { name: string; cost?: number; limit?: number; duration?: number }[];
  tags?: string[];
  upstream?: { identity?: boolean; credits?: boolean; meta?: string[] };
  stripKey?: boolean;
  dryRun?: boolean;
}

/** One policy as forwardAuth.getPolicy answers it (docs/edge.md: the policy file's entry). */
export interface StoredPolicy {
  policyId: string;
  position?: number;
  default: boolean;
  policy: PolicyDefinition;
}

/** A rate-limit row: each number as typed (empty: left out). */
export interface LimitRow {
  name: string;
  cost: string;
  limit: string;
  duration: string;
}

/** The form's state: every field as typed. */
export interface PolicyForm {
  name: string;
  apiId: string;
  hosts: string[];
  paths: string[];
  /** The common methods ticked (METHODS), in that order. */
  methods: string[];
  /** Any other methods, separated by commas or spaces. */
  otherMethods: string;
  keyFrom: KeyFrom;
  keyName: string;
  permissions: string;
  cost: string;
  ratelimits: LimitRow[];
  tags: string;
  upstreamIdentity: boolean;
  upstreamCredits: boolean;
  upstreamMeta: string;
  stripKey: boolean;
  dryRun: boolean;
}

/** The methods offered as checkboxes; others go in a field of their own. */
export const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

export const KEY_FROM: readonly KeyFrom[] = ["bearer", "header", "query", "cookie"];

/** The policy schema's bounds (gateway/src/forward-auth/policy.ts; docs/limits.md). */
export const POLICY_BOUNDS = {
  hosts: 20,
  paths: 20,
  methods: 10,
  ratelimits: 10,
  tags: 10,
  meta: 20,
  maxCost: 1_000_000_000_000,
} as const;

const words = (text: string) => text.split(/[\s,]+/).filter(Boolean);
const filled = (rows: string[]) => rows.map((r) => r.trim()).filter(Boolean);
const numberText = (n: number | undefined) => (n === undefined ? "" : String(n));

/** The form for a stored policy, or for a new one (empty but for one path row). */
export function formOf(p?: PolicyDefinition): PolicyForm {
  const methods = p?.methods ?? [];
  return {
    name: p?.name ?? "",
    apiId: p?.apiId ?? "",
    hosts: p?.hosts ? [...p.hosts] : [],
    paths: p ? [...(p.paths ?? [])] : [""],
    methods: METHODS.filter((m) => methods.includes(m)),
    otherMethods: methods.filter((m) => !(METHODS as readonly string[]).includes(m)).join(", "),
    keyFrom: p?.key?.from ?? "bearer",
    keyName: p?.key?.name ?? "",
    permissions: p?.permissions ?? "",
    cost: numberText(p?.cost),
    ratelimits: (p?.ratelimits ?? []).map((r) => ({
      name: r.name,
      cost: numberText(r.cost),
      limit: numberText(r.limit),
      duration: numberText(r.duration),
    })),
    tags: (p?.tags ?? []).join(", "),
    upstreamIdentity: p?.upstream?.identity === true,
    upstreamCredits: p?.upstream?.credits === true,
    upstreamMeta: (p?.upstream?.meta ?? []).join(", "),
    stripKey: p?.stripKey === true,
    dryRun: p?.dryRun === true,
  };
}

/**
 * The definition the form stands for, as the API takes it: empty fields and rows left out, and a
 * default's hosts, paths and methods too (it matches what no other policy does).
 */
export function policyOf(f: PolicyForm, isDefault: boolean): PolicyDefinition {
  const p: PolicyDefinition = { name: f.name.trim(), apiId: f.apiId.trim() };
  if (!isDefault) {
    const hosts = filled(f.hosts);
    const paths = filled(f.paths);
    const methods = [...f.methods, ...words(f.otherMethods).filter((m) => !f.methods.includes(m))];
    if (hosts.length > 0) p.hosts = hosts;
    if (paths.length > 0) p.paths = paths;
    if (methods.length > 0) p.methods = methods;
  }
  if (f.keyFrom !== "bearer") p.key = { from: f.keyFrom, name: f.keyName.trim() };
  if (f.permissions.trim()) p.permissions = f.permissions.trim();
  if (f.cost.trim() !== "") p.cost = Number(f.cost);
  if (f.ratelimits.length > 0) {
    p.ratelimits = f.ratelimits.map((r) => ({
      name: r.name.trim(),
      ...(r.cost.trim() === "" ? {} : { cost: Number(r.cost) }),
      ...(r.limit.trim() === "" ? {} : { limit: Number(r.limit) }),
      ...(r.duration.trim() === "" ? {} : { duration: Number(r.duration) }),
    }));
  }
  if (words(f.tags).length > 0)
    p.tags = f.tags
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
  const meta = words(f.upstreamMeta);
  if (f.upstreamIdentity || f.upstreamCredits || meta.length > 0) {
    p.upstream = {
      ...(f.upstreamIdentity ? { identity: true } : {}),
      ...(f.upstreamCredits ? { credits: true } : {}),
      ...(meta.length > 0 ? { meta } : {}),
    };
  }
  if (f.stripKey) p.stripKey = true;
  if (f.dryRun) p.dryRun = true;
  return p;
}

/** A field the form refuses: `field` names its input (fieldId), `message` says what to fix. */
export interface Problem {
  field: string;
  message: string;
}

/** The id of a field's input on the page: `name`, `path-0`, `ratelimit-1-name`, … */
export const fieldId = (field: string) => `policy-${field}`;

const isWhole = (text: string, max = Number.MAX_SAFE_INTEGER) =>
  /^\d+$/.test(text.trim()) && Number(text) <= max;

/**
 * What the form holds that the API would refuse, each at its field, in the form's order; none: it
 * may be sent. The rules beyond the schema are packages/runtime's policyRuleViolation's.
 */
export function problemsOf(f: PolicyForm, isDefault: boolean): Problem[] {
  const out: Problem[] = [];
  const add = (field: string, message: string) => out.push({ field, message });
  const name = f.name.trim();
  if (name === "") add("name", "Name: give the policy a name.");
  else if (name.length > 64 || !/^[a-zA-Z0-9_.:-]+$/.test(name))
    add("name", "Name: 1 to 64 letters, digits and _ . : - (no spaces).");
  const apiId = f.apiId.trim();
  if (apiId === "") add("apiId", "API: give the id of one of this workspace's APIs (api_…).");
  else if (apiId.length > 255 || !/^[a-zA-Z0-9_]+$/.test(apiId))
    add("apiId", "API: an API id holds only letters, digits and _.");
  if (!isDefault) {
    const hosts = f.hosts.map((h) => h.trim());
    if (filled(hosts).length > POLICY_BOUNDS.hosts) add("hosts", `Hosts: at most ${POLICY_BOUNDS.hosts}.`);
    hosts.forEach((h, i) => {
      if (h !== "" && (h.length > 255 || !/^[a-zA-Z0-9*.:-]+$/.test(h)))
        add(`host-${i}`, `Host ${i + 1}: a host name such as api.example.com or *.example.com.`);
    });
    const paths = f.paths.map((p) => p.trim());
    if (filled(paths).length > POLICY_BOUNDS.paths) add("paths", `Paths: at most ${POLICY_BOUNDS.paths}.`);
    paths.forEach((p, i) => {
      if (p !== "" && (p.length > 512 || !/^\/[\x21-\x7e]*$/.test(p)))
        add(`path-${i}`, `Path ${i + 1}: starts with / and holds no spaces, such as /v1/orders/**.`);
    });
    const others = words(f.otherMethods);
    const bad = others.find((m) => m.length > 16 || !/^[A-Z]+$/.test(m));
    if (bad !== undefined)
      add("otherMethods", `Other methods: '${bad}' is no method; methods are in capitals.`);
    else if (new Set([...f.methods, ...others]).size > POLICY_BOUNDS.methods)
      add("otherMethods", `Methods: at most ${POLICY_BOUNDS.methods}.`);
  }
  if (f.keyFrom !== "bearer") {
    const keyName = f.keyName.trim();
    if (keyName === "")
      add("keyName", `Key name: a key read from a ${f.keyFrom} needs the ${f.keyFrom}'s name.`);
    else if (keyName.length > 128 || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(keyName))
      add("keyName", `Key name: a ${f.keyFrom} name of letters, digits and - _ . (no spaces).`);
  }
  if (f.stripKey && (f.keyFrom === "query" || f.keyFrom === "cookie"))
    add(
      "stripKey",
      `Strip the key: a key in a ${f.keyFrom} cannot be stripped; read it from a header instead.`,
    );
  if (f.permissions.trim().length > 1000) add("permissions", "Permissions: at most 1000 characters.");
  if (f.cost.trim() !== "" && !isWhole(f.cost, POLICY_BOUNDS.maxCost))
    add("cost", "Cost: a whole number of credits, 0 or more (0 checks without spending).");
  if (f.ratelimits.length > POLICY_BOUNDS.ratelimits)
    add("ratelimits", `Rate limits: at most ${POLICY_BOUNDS.ratelimits}.`);
  f.ratelimits.forEach((r, i) => {
    const n = r.name.trim();
    if (n.length < 3 || n.length > 255)
      add(
        `ratelimit-${i}-name`,
        `Rate limit ${i + 1} name: 3 to 255 characters, a limit of the key or its identity.`,
      );
    for (const part of ["cost", "limit", "duration"] as const) {
      if (r[part].trim() !== "" && !isWhole(r[part]))
        add(`ratelimit-${i}-${part}`, `Rate limit ${i + 1} ${part}: a whole number, 0 or more.`);
    }
  });
  const tags = f.tags
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  if (tags.length > POLICY_BOUNDS.tags) add("tags", `Tags: at most ${POLICY_BOUNDS.tags}.`);
  else if (tags.some((t) => t.length > 128)) add("tags", "Tags: each at most 128 characters.");
  const meta = words(f.upstreamMeta);
  if (meta.length > POLICY_BOUNDS.meta) add("upstreamMeta", `Meta fields: at most ${POLICY_BOUNDS.meta}.`);
  else if (meta.some((m) => m.length > 64 || !/^[a-zA-Z0-9_-]+$/.test(m)))
    add("upstreamMeta", "Meta fields: names of letters, digits, _ and -, separated by commas.");
  return out;
}

/**
 * The form's field an API violation points at (`/body/policy/paths/1` is path-1), so the page can
 * show the API's message beside it; undefined when the form has no such field.
 */
export function fieldOfLocation(location: string): string | undefined {
  const m = /^\/body\/policy\/(.+)$/.exec(location);
  if (!m) return undefined;
  const [head, index, part] = m[1]!.split("/");
  switch (head) {
    case "name":
    case "apiId":
    case "permissions":
    case "cost":
    case "tags":
    case "stripKey":
      return head;
    case "hosts":
    case "paths":
      return index === undefined ? head : `${head.slice(0, -1)}-${index}`;
    case "methods":
      return "otherMethods";
    case "key":
      return index === "name" ? "keyName" : "keyFrom";
    case "ratelimits":
      return index === undefined ? "ratelimits" : `ratelimit-${index}-${part ?? "name"}`;
    case "upstream":
      return "upstreamMeta";
    default:
      return undefined;
  }
}
