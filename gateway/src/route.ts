import type { Client } from "@connectrpc/connect";
import type { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import type { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import type { KeysService, VerifyKeyRequest, VerifyKeyResponse } from "@latchkey/proto/keys/v1/keys_pb";
import type { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import type {
  LimitRequest,
  LimitResponse,
  RatelimitService,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import type { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import type { Violation } from "@latchkey/runtime";
import type { Static, TSchema } from "@sinclair/typebox";

/** The services a route may call, built once per gateway. */
/** The contexts that keep audit records, each serving audit.v1.AuditService over its own table. */
export const AUDIT_CONTEXTS = ["keys", "identity", "ratelimit", "webhooks", "portal"] as const;
export type AuditContext = (typeof AUDIT_CONTEXTS)[number];

export interface Services {
  keys: Client<typeof KeysService>;
  ratelimit: Client<typeof RatelimitService>;
  identity: Client<typeof IdentityService>;
  analytics: Client<typeof AnalyticsService>;
  webhooks: Client<typeof WebhookService>;
  portal: Client<typeof PortalService>;
  /** Each context's audit records, served by keys, identity, ratelimit and webhooks over their own transports. */
  audit: Record<AuditContext, Client<typeof AuditService>>;
  /** ratelimits.limit through a batcher: concurrent limits share one LimitBatch call. */
  limit(caller: Caller, request: LimitRequest): Promise<LimitResponse>;
  /** keys.verifyKey through the batcher: concurrent verifications share one VerifyKeyBatch call. */
  verifyKey(caller: Caller, request: VerifyKeyRequest): Promise<VerifyKeyResponse>;
}

export interface RouteContext {
  /** The root key's caller; for a route whose `auth` is not the root key's, one with no workspace. */
  caller: Caller;
  requestId: string;
  services: Services;
  /**
   * The request's own side for the routes that need it (the portal's, and every route served
   * without a root key): its session token, its fields, its client's budgets and the deployment's
   * public origin (gateway/src/portal-web.ts). Undefined elsewhere.
   */
  web?: WebRequest;
}

/** What a portal route, or another served without a root key, reads of the HTTP request beyond its body. */
export interface WebRequest {
  /** A request field by its lower-case name (GitHub's Github-Public-Key-Identifier and -Signature). */
  header(name: string): string | undefined;
  /**
   * Takes one keys.reportLeak from the client's budget (routes/leaks/client-rate.ts); false once it
   * is spent. A client the gateway cannot name (its peer unknown, as in process) is not budgeted.
   */
  takeLeakReport(): boolean;
  /** The portal_session cookie's value (a portal session route only). */
  sessionToken: string | undefined;
  /** Where the deployment is reached: PUBLIC_URL, or the request's own origin (portal URLs). */
  publicOrigin(): string;
  /** Set-Cookie for a session token until `expiresAt` (unix ms), Secure when the public origin is https. */
  sessionCookie(token: string, expiresAt: number): string;
  /** Set-Cookie that removes the session cookie. */
  clearedCookie(): string;
  /** Takes one portal.exchangeCode attempt from the client's budget; throws 429 once it is spent. */
  spendExchange(): void;
}

/**
 * What a route answers: `data`, always (an operation with nothing to say answers `{}`), and for
 * Unkey's list operations `pagination` beside it; or, from a hot-path route's own
 * serialiser (keys.verifyKey, ratelimits.limit), `json`: the data already written as JSON.
 */
export type Reply =
  | {
      data: unknown;
      json?: undefined;
      bare?: undefined;
      pagination?: { cursor?: string; hasMore: boolean };
      /** Response headers beyond the defaults (the portal's Set-Cookie and Cache-Control). */
      headers?: Readonly<Record<string, string>>;
    }
  | { json: string; data?: undefined; bare?: undefined; pagination?: undefined; headers?: undefined }
  /**
   * JSON answered as it is, without the envelope: a route served without a root key that answers
   * another's shape (GitHub's, keys.receiveGithubLeaks). The root-key path never reads it.
   */
  | { bare: string; data?: undefined; json?: undefined; pagination?: undefined; headers?: undefined };

/**
 * One public operation. Every route has the same shape: the gateway
 * validates the body against `schema`, authenticates, checks `permissions`,
 * then `handle` calls one RPC and maps its answer. No business rules here.
 * A route whose `auth` is set is served without a root key, through one path (gateway.ts).
 */
export interface Route<S extends TSchema = TSchema> {
  schema: S;
  /**
   * A body the operation accepts: the example of docs/openapi.json, and what tests send when the
   * body is not what they are about.
   */
  example: Static<S>;
  /** The root-key permissions it needs, in docs/api.md's spelling; checked here or by the service. */
  rootKey: RootKeyNeeds;
  /**
   * The error statuses it answers beyond those every operation may (400, 401, 403, 405, 408,
   * 413, 500, 503): documented in docs/openapi.json, and the only other 4xx the fuzz test allows.
   */
  errors?: ErrorStatus[];
  /** What `data` holds on success (JSON Schema): documented, and held against every answer end to end. */
  answer: TSchema;
  /** Whether a success carries `pagination {cursor?, hasMore}` beside `data`. */
  paginated?: true;
  /**
   * A management change: the service writes an audit record of it (docs/api.md, The audit log), so its
   * caller carries the request id. Reads, verifications and limits never do, so the hot path's callers
   * stay as they are.
   */
  audited?: true;
  /**
   * Who calls it: a root key (unset, every operation but the portal's session calls); a portal
   * session, its token in the portal_session cookie (`portalSession`, docs/portal.md); or anyone
   * (`none`: portal.exchangeCode, where the code is the credential, and the leak reports, routes/leaks).
   */
  auth?: "portalSession" | "none";
  /**
   * The body handed to `handle` as the bytes that came, neither parsed nor validated (GitHub signs
   * the bytes, routes/leaks): its `schema` is `Type.Uint8Array()`. Only where `auth` is set.
   */
  rawBody?: true;
  /**
   * `false`: served, but left out of docs/openapi.json and OPERATIONS (and so of the tests that run
   * every operation through the contract): the leak reports, which docs/api.md (Leaked keys) documents.
   */
  openapi?: false;
  /** What the API reference says beyond the defaults, chiefly where Latchkey goes further than Unkey. */
  description?: string;
  /** Fields refused on purpose, with the message that explains why (instead of "unknown field"). */
  refused?: Record<string, Omit<Violation, "location">>;
  /** Permissions needed whatever the resource's state, checked before any call (403 when lacking). */
  permissions?(input: Static<S>): string[];
  handle(input: Static<S>, ctx: RouteContext): Promise<Reply>;
}

/** 404 a resource, 409 a taken name, 412 a precondition, 422 and 429 analytics' limits (docs/api.md). */
export type ErrorStatus = 404 | 409 | 412 | 422 | 429;

export interface RootKeyNeeds {
  /** Each of these, with `<apiId>`, `<namespace>` standing for the resource the request names. */
  needs: string[];
  /** When it needs more, e.g. "`recoverable`: also `api.<apiId>.encrypt_key`". */
  also?: string;
  /**
   * How a root key lacking them is answered when that is not 403: as for a resource that does not
   * exist, so a caller learns nothing of resources it may not see.
   */
  masked?: string;
}

/** Keeps each route's input type tied to its schema. */
export const route = <S extends TSchema>(r: Route<S>): Route<S> => r;
