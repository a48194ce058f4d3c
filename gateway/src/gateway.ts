import { randomFillSync } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createClient, type Transport } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import {
  KeysService,
  type VerifyKeyBatchItem,
  type VerifyKeyRequest,
  type VerifyKeyResponse,
} from "@latchkey/proto/keys/v1/keys_pb";
import { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import {
  type LimitBatchItem,
  type LimitRequest,
  type LimitResponse,
  RatelimitService,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import {
  type Bus,
  type Clock,
  collectProcessMetrics,
  env,
  httpDuration,
  type Logger,
  type Probe,
  requirePermissions,
} from "@latchkey/runtime";
import { type Page, REFERENCE_PATHS, referencePage } from "./api-reference.ts";
import { RootKeyAuth } from "./auth.ts";
import { batchedByCaller } from "./batch.ts";
import { type RequestOrigin, TrustedProxies } from "./client-address.ts";
import { policiesFromEnv } from "./forward-auth/file.ts";
import { createForwardAuth, type PolicySource } from "./forward-auth/forward-auth.ts";
import { FORWARD_AUTH_PATH } from "./forward-auth/request.ts";
import { StoredPolicies } from "./forward-auth/stored-policies.ts";
import { MAX_DEPTH, tooDeepAt } from "./limits.ts";
import { readBody } from "./node-body.ts";
import { PortalWeb, sessionCookie } from "./portal-web.ts";
import { Problem, problemBody, problemOf, problems } from "./problem.ts";
import type { Reply, Route, Services } from "./route.ts";
import { type Operation, routes } from "./routes/index.ts";
import { compile, holdsFreeJson, type Validate } from "./schema.ts";

export interface GatewayDeps {
  /** KeysService: APIs, keys, verification and root keys. */
  keys: Transport;
  /** RatelimitService: standalone limits and overrides. */
  ratelimit: Transport;
  /** IdentityService: identities, permissions and roles. */
  identity: Transport;
  /** AnalyticsService: verification analytics. */
  analytics: Transport;
  /** WebhookService: webhooks and their deliveries. */
  webhooks: Transport;
  /** PortalService: portals and their sessions. */
  portal: Transport;
  /**
   * Where the deployment is reached from outside (PUBLIC_URL): the base of the portal's URLs and
   * the origin its state-changing calls must come from. Unset: env PUBLIC_URL; neither: each
   * request's own origin (docs/portal.md).
   */
  publicUrl?: string;
  /** Each client's budget of portal.exchangeCode attempts (portal-web.ts); tests that send many raise it. */
  exchangeBudget?: { burst: number; perMinute: number };
  /** Where the cause of a 5xx is written, once, with its requestId. */
  log: Logger;
  /** Time for the root-key cache. */
  clock: Clock;
  /** events.keys.changed: drops a cached root key the moment it changes. */
  bus?: Bus;
  /** How long a resolved root key is trusted (env ROOT_KEY_CACHE_TTL_MS, default 5000, at most 60000). */
  rootKeyCacheTtlMs?: number;
  /**
   * The proxies whose X-Forwarded-For names the client, for each client's budget of root-key
   * lookups: addresses and CIDRs, comma-separated. Unset: env TRUSTED_PROXIES; neither: none.
   */
  trustedProxies?: string;
  /** Largest request body accepted; larger answers 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Answers /readyz; without it the gateway is ready once it listens. */
  probe?: Probe;
  /**
   * Batches of verifications and of limit checks out at once, per kind (default 2). Across a
   * network hop every batch costs a call, so few and large batches are cheapest. In one process
   * (`npm start`) a batch costs no call, and what a verification waits on is its credit
   * statement: more batches out let more of them share the next one.
   */
  batchesInFlight?: number;
  /**
   * Files served at other paths than the API's (the console, console/server/pages.ts): asked only
   * after the path is no operation, so the API's requests never reach it. True when it answered.
   */
  pages?: (x: Exchange, path: string) => boolean;
  /**
   * Forward-auth's policies per workspace (forward-auth/); unset: FORWARD_AUTH_POLICIES_FILE for
   * FORWARD_AUTH_WORKSPACE_ID, or none.
   */
  forwardAuthPolicies?: PolicySource;
}

export interface Gateway {
  /** A node:http request listener, so tests and the all-in-one process can mount the gateway. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /**
   * A request whose body another HTTP server has read (edge.ts): `body` is the whole body, or
   * "too large" when it was longer than maxBodyBytes and not read (answered 413, connection: close).
   */
  exchange(x: Exchange, body: Buffer | "too large"): void;
  /** The largest body `exchange` is handed; a longer one is "too large". */
  readonly maxBodyBytes: number;
  close(): Promise<void>;
}

/**
 * One request as the gateway sees it, whichever HTTP server read it, and how its answer goes out.
 * Its origin (peer, forwardedFor) is read only when a new root key must be looked up.
 */
export interface Exchange extends RequestOrigin {
  readonly method: string;
  /** The request target as sent: path and query. */
  readonly url: string;
  readonly authorization: string | undefined;
  readonly accept: string | undefined;
  /**
   * A request field by its lower-case name, repeated ones joined with ", " (Cookie's with "; "); read
   * by forward-auth and the portal's routes (portal-web.ts) only. The edge's head holds latin1 text,
   * as node:http's does.
   */
  header?(name: string): string | undefined;
  /** Set by the gateway on an operation's request: what latchkey_http_request_duration_seconds times. */
  timing?: { operation: Operation; started: number } | undefined;
  /** Sends the whole answer, once; `headers` are extra response headers (allow, connection: close). */
  reply(status: number, contentType: string, body: string, headers?: Readonly<Record<string, string>>): void;
}

/** A node:http request and response as an Exchange. */
class NodeExchange implements Exchange {
  timing: { operation: Operation; started: number } | undefined = undefined;
  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {}
  get method() {
    return this.req.method ?? "?";
  }
  get url() {
    return this.req.url ?? "/";
  }
  get authorization() {
    return this.req.headers.authorization;
  }
  get accept() {
    return this.req.headers.accept;
  }
  get peer() {
    // Tests mount the gateway on requests without a socket.
    return this.req.socket?.remoteAddress;
  }
  get forwardedFor() {
    const value = this.req.headers["x-forwarded-for"];
    return Array.isArray(value) ? value.join(", ") : value;
  }
  header(name: string): string | undefined {
    const value = this.req.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  }
  reply(status: number, contentType: string, body: string, headers?: Readonly<Record<string, string>>) {
    this.res.writeHead(status, {
      ...headers,
      "content-type": contentType,
      "content-length": Buffer.byteLength(body),
    });
    this.res.end(body);
  }
}

interface Served {
  operation: Operation;
  /**
   * The route's own two, held here: routes are literals of many shapes (their documentation
   * fields), and reading them from one object shape keeps the property loads per request monomorphic.
   */
  permissions: Route["permissions"];
  handle: Route["handle"];
  validate: Validate<unknown>;
  /** Whether its body may hold JSON of any depth (meta), so the depth is checked before parsing. */
  freeJson: boolean;
  /** Whether it changes state: its caller then carries the request id, for the change's audit record. */
  changes: boolean;
  /** Who calls it (Route.auth): a root key, a portal session, or anyone. */
  auth: "rootKey" | "portalSession" | "none";
  /** Whether its handler reads the request's side (RouteContext.web): the portal's routes. */
  web: boolean;
  /** Whether its handler is handed the body's bytes, unparsed (Route.rawBody; served without a root key). */
  rawBody: boolean;
}

const JSON_TYPE = "application/json";

/** The longest a resolved root key may be trusted without asking again (ROOT_KEY_CACHE_TTL_MS). */
export const MAX_ROOT_KEY_CACHE_TTL_MS = 60_000;

const verifyItem = (callerIndex: number, request: VerifyKeyRequest): VerifyKeyBatchItem => ({
  $typeName: "keys.v1.VerifyKeyBatchItem",
  callerIndex,
  request,
});
const limitItem = (callerIndex: number, request: LimitRequest): LimitBatchItem => ({
  $typeName: "ratelimit.v1.LimitBatchItem",
  callerIndex,
  request,
});

export function createGateway(deps: GatewayDeps): Gateway {
  collectProcessMetrics();
  const keys = createClient(KeysService, deps.keys);
  const ratelimit = createClient(RatelimitService, deps.ratelimit);
  const ttlMs = deps.rootKeyCacheTtlMs ?? 5_000;
  // Without the bus (or when it misses a change) a revoked root key works until its entry expires.
  if (!(Number.isInteger(ttlMs) && ttlMs >= 0 && ttlMs <= MAX_ROOT_KEY_CACHE_TTL_MS)) {
    throw new Error(
      `ROOT_KEY_CACHE_TTL_MS must be 0 to ${MAX_ROOT_KEY_CACHE_TTL_MS} ms: a revoked root key keeps working until its cache entry expires; got ${ttlMs}`,
    );
  }
  // A bad TRUSTED_PROXIES stops the start, naming it.
  const trustedProxies = TrustedProxies.parse(deps.trustedProxies ?? env.string("TRUSTED_PROXIES"));
  const auth = new RootKeyAuth(keys, deps.clock, { ttlMs, trustedProxies }, deps.bus);
  // A bad PUBLIC_URL stops the start, naming it.
  const portalWeb = new PortalWeb(
    deps.publicUrl ?? env.string("PUBLIC_URL"),
    trustedProxies,
    deps.clock,
    deps.exchangeBudget,
  );
  const maxBody = deps.maxBodyBytes ?? 1024 * 1024;
  const batching = { maxInFlight: deps.batchesInFlight ?? 2 };
  const services: Services = {
    keys,
    ratelimit,
    identity: createClient(IdentityService, deps.identity),
    analytics: createClient(AnalyticsService, deps.analytics),
    webhooks: createClient(WebhookService, deps.webhooks),
    portal: createClient(PortalService, deps.portal),
    audit: {
      keys: createClient(AuditService, deps.keys),
      identity: createClient(AuditService, deps.identity),
      ratelimit: createClient(AuditService, deps.ratelimit),
      webhooks: createClient(AuditService, deps.webhooks),
      portal: createClient(AuditService, deps.portal),
    },
    // Requests and their items are messages written as literals, handed over as they are in process.
    verifyKey: batchedByCaller<VerifyKeyRequest, VerifyKeyResponse, VerifyKeyBatchItem>(
      "VerifyKeyBatch",
      async (callers, items) =>
        (await keys.verifyKeyBatch({ $typeName: "keys.v1.VerifyKeyBatchRequest", callers, items })).results,
      { ...batching, item: verifyItem },
    ),
    limit: batchedByCaller<LimitRequest, LimitResponse, LimitBatchItem>(
      "LimitBatch",
      async (callers, items) =>
        (await ratelimit.limitBatch({ $typeName: "ratelimit.v1.LimitBatchRequest", callers, items })).results,
      { ...batching, item: limitItem },
    ),
  };

  // The file's policies, then the workspace's stored ones, loaded once and dropped on a change.
  const storedPolicies = new StoredPolicies(
    deps.forwardAuthPolicies ?? policiesFromEnv(),
    async (caller) => (await keys.loadForwardAuthPolicies({ caller })).policies,
    { clock: deps.clock, log: deps.log, ...(deps.bus ? { bus: deps.bus } : {}) },
  );
  const forwardAuth = createForwardAuth({
    auth,
    verifyKey: services.verifyKey,
    policies: storedPolicies,
    trustedProxies,
    clock: deps.clock,
    log: deps.log,
  });

  // Schemas are compiled once, here, never per request. Every operation served, those left out of
  // docs/openapi.json (Route.openapi) too.
  const table = new Map<string, Served>();
  for (const operation of Object.keys(routes) as Operation[]) {
    const route: Route = routes[operation];
    if (route.rawBody && route.auth === undefined) {
      throw new Error(
        `${operation}: a route handed its raw body is served without a root key (Route.rawBody)`,
      );
    }
    table.set(`/v2/${operation}`, {
      operation,
      permissions: route.permissions,
      handle: route.handle,
      validate: route.rawBody ? RAW : compile(route.schema, route.refused),
      freeJson: !route.rawBody && holdsFreeJson(route.schema),
      changes: route.audited === true,
      auth: route.auth ?? "rootKey",
      web: operation.startsWith("portal"),
      rawBody: route.rawBody === true,
    });
  }

  // Per request, nothing below is a named closure: esbuild's keepNames (tsx, the bundle) would
  // give each one a defineProperty call, on the hot path.
  function serve(served: Served, x: Exchange, requestId: string, raw: Buffer) {
    if (served.auth !== "rootKey") return serveWithoutRootKey(served, x, requestId, raw);
    const input = validBody(served, x, requestId, raw);
    if (input === REFUSED) return;
    // A cached root key needs no promise hop before the route runs.
    const header = x.authorization;
    let caller = auth.cached(header);
    let replied: Promise<Reply>;
    try {
      replied =
        caller !== undefined
          ? run(served, input, caller, requestId, x)
          : auth.authenticate(header, x).then((c) => {
              caller = c;
              return run(served, input, c, requestId, x);
            });
    } catch (err) {
      return fail(served, x, requestId, caller, err);
    }
    // One then() with both handlers: a second promise per request for .catch() costs more than the try.
    replied.then(
      (reply) => {
        try {
          answer(x, requestId, reply);
        } catch (err) {
          fail(served, x, requestId, caller, err);
        }
      },
      (err: unknown) => fail(served, x, requestId, caller, err),
    );
  }

  /**
   * The body parsed and validated against the route's schema, or REFUSED once the 400 is sent:
   * before authentication, so a malformed request costs no root-key lookup.
   */
  function validBody(served: Served, x: Exchange, requestId: string, raw: Buffer): unknown {
    const body = parseJson(raw, served.freeJson);
    if (body instanceof Problem) {
      fail(served, x, requestId, undefined, body);
      return REFUSED;
    }
    const input = served.validate(body);
    if (!input.ok) {
      const p = problems.invalidInput(
        `POST request body for '/v2/${served.operation}' failed to validate schema: ${input.violations[0]?.message ?? "invalid"}`,
        input.violations,
      );
      fail(served, x, requestId, undefined, p);
      return REFUSED;
    }
    return input.value;
  }

  function run(
    served: Served,
    input: unknown,
    caller: Caller,
    requestId: string,
    x: Exchange,
  ): Promise<Reply> {
    if (served.permissions) requirePermissions(caller, served.permissions(input));
    // The cached caller is shared: a management call gets a copy that carries its request id.
    const c = served.changes ? { ...caller, requestId } : caller;
    if (served.web)
      return served.handle(input, { caller: c, requestId, services, web: portalWeb.request(x, undefined) });
    return served.handle(input, { caller: c, requestId, services });
  }

  /**
   * Every operation no root key authenticates, by Route.auth: a portal session's call (its token in
   * the portal_session cookie, checked by the portal service), or one anyone may make
   * (portal.exchangeCode, where the code is the credential; the leak reports, routes/leaks, handed
   * their body's bytes as they came, since GitHub signs them). A state-changing session call must be
   * same-origin (portal-web.ts), so no other site's page can make it with the user's cookie.
   */
  function serveWithoutRootKey(served: Served, x: Exchange, requestId: string, raw: Buffer) {
    const input = served.rawBody ? raw : validBody(served, x, requestId, raw);
    if (input === REFUSED) return;
    let replied: Promise<Reply>;
    try {
      let token: string | undefined;
      if (served.auth === "portalSession") {
        token = sessionCookie(x.header?.("cookie"));
        if (token === undefined) throw problems.noPortalSession();
        if (served.changes && !portalWeb.sameOrigin(x)) throw problems.crossOrigin();
      }
      replied = served.handle(input, {
        caller: NO_CALLER,
        requestId,
        services,
        web: portalWeb.request(x, token),
      });
    } catch (err) {
      return fail(served, x, requestId, undefined, err);
    }
    replied.then(
      (reply) => {
        try {
          if (reply.bare !== undefined) send(x, 200, JSON_TYPE, reply.bare);
          else answer(x, requestId, reply);
        } catch (err) {
          fail(served, x, requestId, undefined, err);
        }
      },
      (err: unknown) => fail(served, x, requestId, undefined, err),
    );
  }

  function fail(served: Served, x: Exchange, requestId: string, caller: Caller | undefined, err: unknown) {
    const p = problemOf(err, (cause) =>
      deps.log.error(
        { err: cause, requestId, operation: served.operation, workspaceId: caller?.workspaceId },
        "request failed",
      ),
    );
    sendProblem(x, requestId, p);
  }

  /**
   * The operation `x` asks for, timed from here, when it is a POST to one; anything else (a
   * probe, an unknown path, another method) is answered here and gives undefined.
   */
  function route(x: Exchange, requestId: string): Served | undefined {
    const url = x.url;
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const served = table.get(path);
    if (served === undefined) {
      // Outside /v2/: the proxy asks with its client's method, whatever it is.
      if (path === FORWARD_AUTH_PATH || path.startsWith(`${FORWARD_AUTH_PATH}/`))
        forwardAuth(x, url, requestId);
      else probe(x, requestId, path);
      return undefined;
    }
    x.timing = { operation: served.operation, started: performance.now() };
    if (x.method !== "POST") {
      sendProblem(x, requestId, problems.methodNotAllowed(x.method, path), ALLOW_POST);
      return undefined;
    }
    return served;
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const x = new NodeExchange(req, res);
    const requestId = newRequestId();
    const served = route(x, requestId);
    // A request answered without its body (forward-auth's, a probe's): what it sent is dropped.
    if (served === undefined) return void req.resume();
    readBody(req, maxBody).then(
      (raw) => serve(served, x, requestId, raw),
      (err: unknown) =>
        sendProblem(
          x,
          requestId,
          problemOf(err, () => {}),
          CLOSE,
        ),
    );
  }

  function exchange(x: Exchange, body: Buffer | "too large"): void {
    const requestId = newRequestId();
    const served = route(x, requestId);
    if (served === undefined) return;
    if (body === "too large") sendProblem(x, requestId, problems.tooLarge(maxBody), CLOSE);
    else serve(served, x, requestId, body);
  }

  function probe(x: Exchange, requestId: string, path: string) {
    const isGet = x.method === "GET" || x.method === "HEAD";
    // /metrics is not among these: it is served on a port of its own (metrics-server.ts).
    if (path === "/v2/liveness" || path === "/healthz" || path === "/readyz") {
      if (!isGet) return sendProblem(x, requestId, problems.methodNotAllowed(x.method, path), ALLOW_GET);
      if (path === "/v2/liveness") {
        return send(x, 200, JSON_TYPE, JSON.stringify({ meta: { requestId }, data: { message: "OK" } }));
      }
      if (path === "/healthz" || !deps.probe) return send(x, 200, JSON_TYPE, '{"status":"ok"}');
      deps.probe.ready().then(
        (ok) => send(x, ok ? 200 : 503, JSON_TYPE, JSON.stringify({ status: ok ? "ready" : "not ready" })),
        () => send(x, 503, JSON_TYPE, '{"status":"not ready"}'),
      );
      return;
    }
    if (REFERENCE_PATHS.has(path)) {
      if (!isGet) return sendProblem(x, requestId, problems.methodNotAllowed(x.method, path), ALLOW_GET);
      let page: Page;
      try {
        page = referencePage(path);
      } catch (err) {
        deps.log.error({ err, requestId, path }, "the API reference could not be built");
        return sendProblem(x, requestId, problems.unexpected());
      }
      return send(x, 200, page.type, page.body, page.headers);
    }
    if (deps.pages?.(x, path)) return;
    sendProblem(x, requestId, problems.routeNotFound(path));
  }

  return {
    handle,
    exchange,
    maxBodyBytes: maxBody,
    async close() {
      auth.close();
      storedPolicies.close();
    },
  };
}

/** The caller of a route that no root key authenticates: no workspace, no permissions. */
const NO_CALLER: Caller = {
  $typeName: "common.v1.Caller",
  workspaceId: "",
  rootKeyId: "",
  permissions: [],
  requestId: "",
};
/** What validBody gives once it has answered 400. */
const REFUSED: unique symbol = Symbol("refused");
/** A raw body's stand-in validator (Route.rawBody): never called, the bytes are handed over as they came. */
const RAW: Validate<unknown> = (body) => ({ ok: true, value: body });

const ALLOW_POST = { allow: "POST" };
const ALLOW_GET = { allow: "GET, HEAD" };
// The rest of a body that was not read cannot be told from the next request: the connection ends.
const CLOSE = { connection: "close" };

/** The envelope by hand: requestId is letters and digits, so only data and pagination need JSON.stringify. */
function answer(x: Exchange, requestId: string, reply: Reply) {
  let out = `{"meta":{"requestId":"${requestId}"}`;
  // A route's `data` of undefined would drop the field: every success carries data.
  if (reply.json !== undefined) out += `,"data":${reply.json}`;
  else out += `,"data":${JSON.stringify(reply.data) ?? "{}"}`;
  if (reply.pagination !== undefined) out += `,"pagination":${JSON.stringify(reply.pagination)}`;
  send(x, 200, JSON_TYPE, `${out}}`, reply.headers);
}

/**
 * The body parsed, or the Problem with it. Its depth is checked first where the schema takes
 * JSON of any shape (`freeJson`); a closed schema refuses a deeper body where it stops fitting,
 * without recursion, so keys.verifyKey and ratelimits.limit pay nothing for it.
 */
function parseJson(raw: Buffer, freeJson: boolean): unknown {
  if (raw.length === 0) {
    return problems.invalidInput("The request body is empty.", [
      { location: "/body", message: "The body is required.", fix: "Send a JSON body." },
    ]);
  }
  const deep = freeJson ? tooDeepAt(raw) : undefined;
  if (deep !== undefined) {
    return problems.invalidInput(`The request body is nested deeper than ${MAX_DEPTH} levels at ${deep}.`, [
      {
        location: deep,
        message: `Objects and arrays may be nested at most ${MAX_DEPTH} levels deep, the body counting as one.`,
        fix: "Flatten the value, for example by joining nested keys into one.",
      },
    ]);
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    return problems.invalidInput("The request body is not valid JSON.", [
      {
        location: "/body",
        message: `The body is not valid JSON: ${(err as Error).message}`,
        fix: "Send a JSON document with Content-Type: application/json.",
      },
    ]);
  }
  // PostgreSQL's text and jsonb hold neither U+0000 nor a UTF-16 surrogate without its pair, so a body
  // carrying one would fail in a store (a 500) or, as an analytics event, forever. JSON spells either
  // only as a \u escape (a raw control byte is not JSON, and UTF-8 cannot carry a lone surrogate: it
  // decodes to U+FFFD), so a body without such an escape needs no walk.
  if (mayHoldUnstorable(raw)) {
    const found = unstorableAt(body);
    if (found !== undefined) {
      const [at, nul] = found;
      return problems.invalidInput(
        nul
          ? `The request body contains the character U+0000 at ${at}.`
          : `The request body contains an unpaired UTF-16 surrogate at ${at}.`,
        [
          nul
            ? {
                location: at,
                message: "U+0000 (NUL) cannot be stored.",
                fix: "Remove the \\u0000 characters from the value or key.",
              }
            : {
                location: at,
                message: "An unpaired UTF-16 surrogate (\\ud800 to \\udfff) cannot be stored.",
                fix: "Escape a character beyond U+FFFF as its pair of surrogates (\\ud83d\\ude00), or send it as UTF-8.",
              },
        ],
      );
    }
  }
  return body;
}

const BACKSLASH = 0x5c;
const LOWER = 0x20;

/**
 * Whether the JSON text holds an escape of U+0000 (`\u0000`) or of a surrogate (`\ud800` to
 * `\udfff`, either case): one memchr in the common body, which has no backslash. It runs on parsed
 * JSON, where a backslash always begins an escape of the character after it, so `\\u0000` is skipped.
 */
function mayHoldUnstorable(raw: Buffer): boolean {
  for (let i = raw.indexOf(BACKSLASH); i !== -1 && i + 5 < raw.length; i = raw.indexOf(BACKSLASH, i + 2)) {
    if (raw[i + 1] !== 0x75) continue; // u
    const a = raw[i + 2]! | LOWER;
    const b = raw[i + 3]! | LOWER;
    if (a === 0x64 && b >= 0x38 && (b <= 0x39 || (b >= 0x61 && b <= 0x66))) return true; // d8 to df
    if (a === 0x30 && b === 0x30 && raw[i + 4] === 0x30 && raw[i + 5] === 0x30) return true; // 0000
  }
  return false;
}

/** U+0000, or a surrogate not part of a pair (the u flag reads a pair as the one character it is). */
const UNSTORABLE = /[\0\ud800-\udfff]/u;

/**
 * The JSON pointer of the first string value or object key that cannot be stored, and whether what
 * it holds is U+0000 (else an unpaired surrogate); walked without recursion.
 */
function unstorableAt(body: unknown): [string, boolean] | undefined {
  const pending: [unknown, string][] = [[body, "/body"]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, at] = next;
    if (typeof value === "string") {
      const bad = UNSTORABLE.exec(value);
      if (bad !== null) return [at, bad[0] === "\0"];
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${at}/${i}`]);
    } else if (value !== null && typeof value === "object") {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i]!;
        const place = `${at}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
        const bad = UNSTORABLE.exec(key);
        if (bad !== null) return [place, bad[0] === "\0"];
        pending.push([item, place]);
      }
    }
  }
  return undefined;
}

function send(
  x: Exchange,
  status: number,
  contentType: string,
  body: string,
  headers?: Readonly<Record<string, string>>,
) {
  x.reply(status, contentType, body, headers);
  const timing = x.timing;
  if (timing !== undefined) {
    httpDuration.observe(
      { operation: timing.operation, status },
      (performance.now() - timing.started) / 1000,
    );
  }
}

function sendProblem(x: Exchange, requestId: string, p: Problem, headers?: Readonly<Record<string, string>>) {
  // As Unkey: problem+json only for clients that ask for it as docs/api.md says.
  const type = x.accept?.includes("application/problem+json") ? "application/problem+json" : JSON_TYPE;
  send(x, p.status, type, problemBody(requestId, p), headers);
}

// Request ids as Unkey's: "req_" and random letters and digits, drawn from a
// refilled pool so an id costs no system call.
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function newRequestId(): string {
  let id = "req_";
  while (id.length < 20) {
    if (poolAt === pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const b = pool[poolAt++]!;
    // 248 = 62 * 4: rejecting the rest keeps every character equally likely.
    if (b < 248) id += ALNUM[b % 62];
  }
  return id;
}
