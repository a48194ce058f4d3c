import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { create, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { ConnectError, createRouterTransport, type ServiceImpl } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import { verifyKeyBatchCodecs } from "@latchkey/proto/codecs/keys";
import { type Caller, CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import {
  KeysService,
  type VerifyKeyResponse,
  VerifyKeyResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import {
  type LimitBatchRequest,
  type LimitBatchResult,
  LimitBatchResultSchema,
  LimitRequestSchema,
  type LimitResponse,
  RatelimitService,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import {
  type Bus,
  createLogger,
  domainError,
  ErrorReason,
  errorDetailOf,
  hashKey,
  type Logger,
  newId,
  TestClock,
} from "@latchkey/runtime";
import { throughCodecs } from "@latchkey/runtime/testing/codec-transport";
import { createGateway, type Gateway, type GatewayDeps } from "../src/gateway.ts";
import { AUDIT_CONTEXTS, type AuditContext } from "../src/route.ts";

export interface Answer {
  status: number;
  headers: Record<string, string | number | string[]>;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
  body: any;
}

export interface HarnessOptions {
  keys?: Partial<ServiceImpl<typeof KeysService>>;
  ratelimit?: Partial<ServiceImpl<typeof RatelimitService>>;
  identity?: Partial<ServiceImpl<typeof IdentityService>>;
  analytics?: Partial<ServiceImpl<typeof AnalyticsService>>;
  webhooks?: Partial<ServiceImpl<typeof WebhookService>>;
  portal?: Partial<ServiceImpl<typeof PortalService>>;
  /** The gateway's exchangeBudget (portal.exchangeCode attempts per client). */
  exchangeBudget?: { burst: number; perMinute: number };
  /** PUBLIC_URL for the gateway (portal-web.ts); none by default: each request's own origin. */
  publicUrl?: string;
  /** Each context's AuditService, by context; unfaked, each answers no records. */
  audit?: Partial<Record<AuditContext, Partial<ServiceImpl<typeof AuditService>>>>;
  bus?: Bus;
  maxBodyBytes?: number;
  log?: Logger;
  batchesInFlight?: number;
  /** TRUSTED_PROXIES for the gateway (client-address.ts); none by default. */
  trustedProxies?: string;
  /** Forward-auth's policies (forward-auth/); none by default. */
  forwardAuthPolicies?: GatewayDeps["forwardAuthPolicies"];
}

/** The portal session token every request carries unless told otherwise (post's `cookie`). */
export const HARNESS_SESSION = "pat_harness_session";

/** The workspace every test root key belongs to. */
export const WORKSPACE = "ws_test";

/**
 * A gateway in memory, over fake services mounted with createRouterTransport.
 * Requests go through the real `handle` with in-memory request and response
 * objects, so no socket is opened. The fake KeysService knows the root keys
 * made with `rootKey(...)`; pass `keys`/`ratelimit`/`identity`/`analytics` to
 * fake the RPCs a test needs. VerifyKeyBatch and LimitBatch go through the
 * hand-written codec of wire.ts, as in main.ts. Unless faked itself, LimitBatch answers each item
 * with the fake Limit, as the ratelimit service does; `limitBatches` records them.
 */
export function harness(options: HarnessOptions = {}) {
  const rootKeys = new Map<string, Caller>();
  const calls = { authenticateRootKey: 0 };
  const limitBatches: LimitBatchRequest[] = [];
  const clock = new TestClock();
  const noLogs = { listAuditLogs: () => ({ logs: [] }) };
  const keys = createRouterTransport((router) => {
    router.service(AuditService, options.audit?.keys ?? noLogs);
    router.service(KeysService, {
      authenticateRootKey(req) {
        calls.authenticateRootKey++;
        const caller = rootKeys.get(req.hash);
        if (!caller) throw domainError(ErrorReason.UNAUTHENTICATED, "unknown root key");
        return { caller };
      },
      ...options.keys,
    });
  });
  const fakeLimit = options.ratelimit?.limit;
  const ratelimit = createRouterTransport((router) => {
    router.service(AuditService, options.audit?.ratelimit ?? noLogs);
    router.service(RatelimitService, {
      async limitBatch(req, ctx) {
        limitBatches.push(req);
        const results = await Promise.all(
          req.items.map(async (item): Promise<LimitBatchResult> => {
            try {
              if (!fakeLimit) throw new Error("Limit is not faked in this test");
              const request = create(LimitRequestSchema, {
                caller: req.callers[item.callerIndex],
                check: item.request?.check,
                requestId: item.request?.requestId ?? "",
              });
              const value = (await fakeLimit(request, ctx)) as LimitResponse;
              return create(LimitBatchResultSchema, { result: { case: "response", value } });
            } catch (err) {
              const e = ConnectError.from(err);
              const detail = errorDetailOf(e);
              return create(LimitBatchResultSchema, {
                result: { case: "error", value: { code: e.code, message: e.rawMessage, detail } },
              });
            }
          }),
        );
        return { results };
      },
      ...options.ratelimit,
    });
  });
  const identity = createRouterTransport((router) => {
    router.service(AuditService, options.audit?.identity ?? noLogs);
    router.service(IdentityService, options.identity ?? {});
  });
  const analytics = createRouterTransport((router) =>
    router.service(AnalyticsService, options.analytics ?? {}),
  );
  const webhooks = createRouterTransport((router) => {
    router.service(AuditService, options.audit?.webhooks ?? noLogs);
    router.service(WebhookService, options.webhooks ?? {});
  });
  const portal = createRouterTransport((router) => {
    router.service(AuditService, options.audit?.portal ?? noLogs);
    router.service(PortalService, options.portal ?? {});
  });
  const gateway: Gateway = createGateway({
    // As main.ts: VerifyKeyBatch crosses with the hand-written codec, so every route test exercises it.
    keys: throughCodecs(keys, verifyKeyBatchCodecs),
    ratelimit,
    identity,
    analytics,
    webhooks,
    portal,
    publicUrl: options.publicUrl ?? "",
    ...(options.exchangeBudget ? { exchangeBudget: options.exchangeBudget } : {}),
    log: options.log ?? createLogger("gateway-test", "silent"),
    clock,
    bus: options.bus,
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    ...(options.batchesInFlight === undefined ? {} : { batchesInFlight: options.batchesInFlight }),
    trustedProxies: options.trustedProxies ?? "",
    ...(options.forwardAuthPolicies === undefined
      ? {}
      : { forwardAuthPolicies: options.forwardAuthPolicies }),
  });

  /** A root key of the test workspace holding `permissions`; returns its plaintext. */
  function rootKey(...permissions: string[]): string {
    const plaintext = `root_${newId("t")}`;
    rootKeys.set(
      hashKey(plaintext),
      create(CallerSchema, { workspaceId: WORKSPACE, rootKeyId: newId("rk"), permissions }),
    );
    return plaintext;
  }

  const all = rootKey("*");

  function request(
    method: string,
    path: string,
    body: string | Buffer | undefined,
    headers: Record<string, string>,
  ): Promise<Answer> {
    const chunks = body === undefined ? [] : [Buffer.isBuffer(body) ? body : Buffer.from(body)];
    const req = Object.assign(Readable.from(chunks), {
      method,
      url: path,
      headers,
    }) as unknown as IncomingMessage;
    return new Promise((resolve) => {
      const out: Record<string, string | number | string[]> = {};
      let status = 0;
      const res = {
        setHeader(name: string, value: string) {
          out[name.toLowerCase()] = value;
        },
        writeHead(s: number, h: Record<string, string | number>) {
          status = s;
          for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
        },
        end(text: string) {
          const json = String(out["content-type"] ?? "").includes("json");
          resolve({ status, headers: out, body: text === "" ? undefined : json ? JSON.parse(text) : text });
        },
      } as unknown as ServerResponse;
      gateway.handle(req, res);
    });
  }

  return {
    gateway,
    clock,
    calls,
    limitBatches,
    rootKeys,
    rootKey,
    /** POST /v2/<operation> with a JSON body, authenticated with a `*` root key unless `auth` says otherwise. */
    post(
      operation: string,
      body: unknown,
      opts: {
        key?: string;
        authorization?: string | null;
        raw?: string | Buffer;
        accept?: string;
        /** The Cookie field; by default a portal session's, which only the portal's session calls read. */
        cookie?: string | null;
        headers?: Record<string, string>;
      } = {},
    ): Promise<Answer> {
      const headers: Record<string, string> = { "content-type": "application/json", ...opts.headers };
      if (opts.accept) headers["accept"] = opts.accept;
      if (opts.cookie !== null) headers["cookie"] = opts.cookie ?? `portal_session=${HARNESS_SESSION}`;
      if (opts.authorization !== null) {
        headers["authorization"] = opts.authorization ?? `Bearer ${opts.key ?? all}`;
      }
      return request("POST", `/v2/${operation}`, opts.raw ?? JSON.stringify(body), headers);
    },
    get(path: string): Promise<Answer> {
      return request("GET", path, undefined, {});
    },
    request,
    close: () => gateway.close(),
  };
}

export type Harness = ReturnType<typeof harness>;

export const DOCS = "https://unkey.com/docs/errors/";

/** A LimitBatch answer that lets every item through, reporting the limit each asked for (9 remaining). */
export function passingLimits(req: LimitBatchRequest) {
  return {
    results: req.items.map((item) => ({
      result: {
        case: "response" as const,
        value: {
          result: {
            namespace: item.request!.check!.namespace,
            identifier: item.request!.check!.identifier,
            success: true,
            limit: item.request!.check!.limit,
            remaining: 9n,
            reset: 1n,
          },
        },
      },
    })),
  };
}

/**
 * A message of `desc` with every message field set, a few levels deep, to such a message: what a
 * service could answer, with no sub-message missing that a route expects.
 */
export function filledMessage(desc: DescMessage, depth = 0): Record<string, unknown> {
  const message = create(desc) as unknown as Record<string, unknown>;
  if (depth >= 3) return message;
  for (const field of desc.fields) {
    if (field.fieldKind === "message" && field.oneof === undefined) {
      message[field.localName] = filledMessage(field.message, depth + 1);
    }
  }
  return message;
}

/** Called by every fake RPC of answeringEverything with the caller the gateway passed; may throw. */
export type Guard = (caller: Caller | undefined, rpc: string) => void;

/** U+0000, or a surrogate without its pair: what PostgreSQL's text and jsonb refuse. */
const UNSTORABLE = /[\0\ud800-\udfff]/u;

/**
 * Fails as a PostgreSQL store would (a plain error, so the gateway answers 500) when `message`
 * holds a string PostgreSQL cannot store: in a string field, or in the JSON text of a `*Json`
 * field (meta_json), where jsonb refuses `\u0000` and an escaped lone surrogate.
 */
export function storeLikePostgres(message: unknown, rpc: string): void {
  const pending: [unknown, string][] = [[message, ""]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, name] = next;
    if (typeof value === "string") {
      if (UNSTORABLE.test(value)) throw new Error(`${rpc}: invalid byte sequence (in ${name})`);
      if (name.endsWith("Json") && value !== "") {
        try {
          pending.push([JSON.parse(value), name]);
        } catch {}
      }
    } else if (value !== null && typeof value === "object" && !(value instanceof Uint8Array)) {
      for (const [key, item] of Object.entries(value)) {
        if (UNSTORABLE.test(key)) throw new Error(`${rpc}: invalid input syntax for type json (a key)`);
        pending.push([item, key]);
      }
    }
  }
}

/**
 * Every RPC of `service` but those named in `except`, each answering a filled message once `guard`
 * lets it and its request holds nothing PostgreSQL would refuse.
 */
function answeringAll(service: DescService, guard: Guard, except: string[] = []) {
  return Object.fromEntries(
    service.methods
      .filter((m) => !except.includes(m.localName))
      .map((m) => [
        m.localName,
        (req: { caller?: Caller }) => {
          guard(req.caller, m.localName);
          storeLikePostgres(req, m.localName);
          return filledMessage(m.output);
        },
      ]),
  );
}

/**
 * PortalService's fakes: a root key's RPCs as every other service's; a session's (and the code
 * exchange), which carry no caller, show the guard a caller of no workspace holding the request id
 * they carry, so the request-id test sees it.
 */
function answeringPortal(guard: Guard) {
  return Object.fromEntries(
    PortalService.methods.map((m) => [
      m.localName,
      (req: { caller?: Caller; auth?: { requestId: string }; requestId?: string }) => {
        const caller = m.input.fields.some((f) => f.localName === "caller")
          ? req.caller
          : create(CallerSchema, { requestId: req.auth?.requestId ?? req.requestId ?? "" });
        guard(caller, m.localName);
        storeLikePostgres(req, m.localName);
        return filledMessage(m.output);
      },
    ]),
  );
}

/**
 * Fakes of every RPC the gateway may call, each answering success with a filled message
 * (VerifyKeyBatch one per item; LimitBatch through the harness's own, from the faked Limit).
 * Root keys stay the harness's. `guard` sees each call's caller first (each item's, in a batch)
 * and may refuse it by throwing; a request holding a string PostgreSQL cannot store fails as the
 * store would (storeLikePostgres). For tests that run every operation: the envelope, access, fuzz.
 */
export function answeringEverything(guard: Guard = () => {}): HarnessOptions {
  return {
    keys: {
      ...answeringAll(KeysService, guard, ["authenticateRootKey", "verifyKeyBatch"]),
      verifyKeyBatch: (req) => ({
        results: req.items.map((item) => {
          try {
            guard(req.callers[item.callerIndex], "verifyKey");
            storeLikePostgres(item.request, "verifyKey");
          } catch (err) {
            const e = ConnectError.from(err);
            return {
              result: {
                case: "error" as const,
                value: { code: e.code, message: e.rawMessage, detail: errorDetailOf(e) },
              },
            };
          }
          return {
            result: {
              case: "response" as const,
              value: filledMessage(VerifyKeyResponseSchema) as unknown as VerifyKeyResponse,
            },
          };
        }),
      }),
    },
    ratelimit: answeringAll(RatelimitService, guard, ["limitBatch"]),
    identity: answeringAll(IdentityService, guard),
    analytics: answeringAll(AnalyticsService, guard),
    webhooks: answeringAll(WebhookService, guard),
    portal: answeringPortal(guard),
    // No records (a filled record would not be one a service writes), after the guard.
    audit: Object.fromEntries(
      AUDIT_CONTEXTS.map((context) => [
        context,
        {
          listAuditLogs: (req: { caller?: Caller }) => {
            guard(req.caller, "listAuditLogs");
            return { logs: [] };
          },
        },
      ]),
    ),
  };
}
