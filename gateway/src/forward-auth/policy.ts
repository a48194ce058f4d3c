import { policyRuleViolation } from "@latchkey/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Closed, compile, Enum, ID_PATTERN, Int, Str } from "../schema.ts";

/**
 * A forward-auth policy: which requests it covers (hosts, paths, methods) and how they are
 * verified (the API, where the key is, the permission query, the cost, named rate limits, tags)
 * and what the upstream is told. Bounds are docs/limits.md's.
 */
export const PolicySchema = Closed({
  name: Str(1, 64, "^[a-zA-Z0-9_.:-]+$"),
  /** Host patterns (`api.example.com`, `*.example.com`); none: any host. */
  hosts: Type.Optional(Type.Array(Str(1, 255, "^[a-zA-Z0-9*.:-]+$"), { maxItems: 20 })),
  /** Path patterns: `*` one segment, a trailing `**` the rest (`/v1/**`); none: any path. */
  paths: Type.Optional(Type.Array(Str(1, 512, "^/[\\x21-\\x7e]*$"), { maxItems: 20 })),
  /** Methods; none: any. */
  methods: Type.Optional(Type.Array(Str(1, 16, "^[A-Z]+$"), { maxItems: 10 })),
  apiId: Str(1, 255, ID_PATTERN),
  /** Where the client's key is; default the Authorization header's Bearer token. */
  key: Type.Optional(
    Closed({
      from: Enum(["bearer", "header", "query", "cookie"] as const),
      /** The header, query parameter or cookie's name (not for bearer). */
      name: Type.Optional(Str(1, 128, "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")),
    }),
  ),
  permissions: Type.Optional(Str(1, 1000)),
  cost: Type.Optional(Int({ maximum: 1_000_000_000_000 })),
  ratelimits: Type.Optional(
    Type.Array(
      Closed({
        name: Str(3, 255),
        cost: Type.Optional(Int()),
        limit: Type.Optional(Int()),
        duration: Type.Optional(Int()),
      }),
      { maxItems: 10 },
    ),
  ),
  tags: Type.Optional(Type.Array(Str(1, 128), { maxItems: 10 })),
  /** What the 200 tells the upstream beyond the key id: the identity, meta fields, remaining credits. */
  upstream: Type.Optional(
    Closed({
      identity: Type.Optional(Type.Boolean()),
      credits: Type.Optional(Type.Boolean()),
      meta: Type.Optional(Type.Array(Str(1, 64, "^[a-zA-Z0-9_-]+$"), { maxItems: 20 })),
    }),
  ),
  /** Whether the key is kept from the upstream (a Bearer key: Authorization is forwarded empty). */
  stripKey: Type.Optional(Type.Boolean()),
  /** Verifies and records as always, then allows whatever the verdict (the answer says what it was). */
  dryRun: Type.Optional(Type.Boolean()),
});

export type PolicyInput = Static<typeof PolicySchema>;

/** A workspace's policies: tried in order, the first match wins; `default` covers the rest. */
export const PolicySetSchema = Closed({
  policies: Type.Array(PolicySchema, { maxItems: 100 }),
  default: Type.Optional(Type.Omit(PolicySchema, ["hosts", "paths", "methods"])),
});

export type PolicySetInput = Static<typeof PolicySetSchema>;

export const validatePolicySet = compile(PolicySetSchema);

/** A policy ready to match: its patterns compiled once. */
export interface Policy extends PolicyInput {
  readonly matchHost: (host: string) => boolean;
  readonly matchPath: (path: string) => boolean;
  readonly methodSet: ReadonlySet<string> | undefined;
}

/** A workspace's policies, held in the gateway: asked once per request, never a call. */
export interface PolicySource {
  of(workspaceId: string): PolicySet;
}

export class PolicySet {
  private constructor(
    readonly policies: readonly Policy[],
    readonly fallback: Policy | undefined,
    /** What a cache counts it as: its definitions' JSON size, with room for what compiling adds. */
    readonly bytes: number,
  ) {}

  /** Policies checked beyond the schema: names unique, each key location with the name it needs. */
  static from(input: PolicySetInput, definitionBytes = 0): PolicySet {
    const names = new Set<string>();
    const all = input.default ? [...input.policies, { ...input.default }] : input.policies;
    for (const [i, p] of all.entries()) {
      const at = i < input.policies.length ? `/policies/${i}` : "/default";
      if (names.has(p.name)) throw new PolicyError(`${at}/name`, `the name '${p.name}' is used twice`);
      names.add(p.name);
      const broken = policyRuleViolation(p, at);
      if (broken) throw new PolicyError(broken.location, broken.reason);
    }
    return new PolicySet(
      input.policies.map(compilePolicy),
      input.default ? compilePolicy(input.default) : undefined,
      1024 + 4 * definitionBytes + 512 * all.length,
    );
  }

  static readonly empty = new PolicySet([], undefined, 1024);

  /** The first policy covering the request, else the default, else none. */
  match(method: string, host: string, path: string): Policy | undefined {
    return this.first(method, host, path) ?? this.fallback;
  }

  /** The first policy covering the request, the default left out. */
  first(method: string, host: string, path: string): Policy | undefined {
    const h = hostOnly(host);
    for (const p of this.policies) {
      if (p.methodSet !== undefined && !p.methodSet.has(method)) continue;
      if (!p.matchHost(h) || !p.matchPath(path)) continue;
      return p;
    }
    return undefined;
  }
}

/** A policy that fails a rule beyond the schema, at a JSON pointer. */
export class PolicyError extends Error {
  constructor(
    readonly location: string,
    readonly reason: string,
  ) {
    super(`${location}: ${reason}`);
  }
}

function compilePolicy(p: PolicyInput): Policy {
  const hosts = p.hosts?.map(hostPattern);
  const paths = p.paths?.map(pathPattern);
  return {
    ...p,
    matchHost: hosts === undefined ? always : (h) => hosts.some((r) => r.test(h)),
    matchPath: paths === undefined ? always : (path) => paths.some((r) => r.test(path)),
    methodSet: p.methods === undefined ? undefined : new Set(p.methods),
  };
}

const always = () => true;

const literal = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&");

/** `*.example.com` covers one or more labels before example.com; hosts compare without case. */
function hostPattern(pattern: string): RegExp {
  return new RegExp(`^${literal(pattern.toLowerCase()).replaceAll("*", "[^.]+(?:\\.[^.]+)*")}$`);
}

/** `*` is one path segment, `**` at the end any rest (none included): `/v1/**` covers `/v1` and `/v1/a/b`. */
function pathPattern(pattern: string): RegExp {
  let body = pattern;
  let tail = "";
  if (body.endsWith("/**")) {
    body = body.slice(0, -3);
    tail = "(?:/.*)?";
  }
  return new RegExp(`^${literal(body).replaceAll("*", "[^/]*")}${tail}$`);
}

/** The host without its port, lower case (`API.example.com:8443` is `api.example.com`). */
function hostOnly(host: string): string {
  const h = host.toLowerCase();
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  const colon = h.lastIndexOf(":");
  return colon === -1 ? h : h.slice(0, colon);
}
