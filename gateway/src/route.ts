import type { Client } from "@connectrpc/connect";
import type { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import type { KeysService, VerifyKeyRequest, VerifyKeyResponse } from "@latchkey/proto/keys/v1/keys_pb";
import type {
  LimitRequest,
  LimitResponse,
  RatelimitService,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import type { Violation } from "@latchkey/runtime";
import type { Static, TSchema } from "@sinclair/typebox";

/** The services a route may call, built once per gateway. */
export interface Services {
  keys: Client<typeof KeysService>;
  ratelimit: Client<typeof RatelimitService>;
  identity: Client<typeof IdentityService>;
  analytics: Client<typeof AnalyticsService>;
  /** ratelimits.limit through a batcher: concurrent limits share one LimitBatch call. */
  limit(caller: Caller, request: LimitRequest): Promise<LimitResponse>;
  /** keys.verifyKey through the batcher: concurrent verifications share one VerifyKeyBatch call. */
  verifyKey(caller: Caller, request: VerifyKeyRequest): Promise<VerifyKeyResponse>;
}

export interface RouteContext {
  caller: Caller;
  requestId: string;
  services: Services;
}

/**
 * What a route answers: `data`, always (an operation with nothing to say answers `{}`), and for
 * Unkey's list operations `pagination` beside it; or, from a hot-path route's own
 * serialiser (keys.verifyKey, ratelimits.limit), `json`: the data already written as JSON.
 */
export type Reply =
  | { data: unknown; json?: undefined; pagination?: { cursor?: string; hasMore: boolean } }
  | { json: string; data?: undefined; pagination?: undefined };

/**
 * One public operation. Every route has the same shape: the gateway
 * validates the body against `schema`, authenticates, checks `permissions`,
 * then `handle` calls one RPC and maps its answer. No business rules here.
 */
export interface Route<S extends TSchema = TSchema> {
  schema: S;
  /** Fields refused on purpose, with the message that explains why (instead of "unknown field"). */
  refused?: Record<string, Omit<Violation, "location">>;
  /** Permissions needed whatever the resource's state, checked before any call (403 when lacking). */
  permissions?(input: Static<S>): string[];
  handle(input: Static<S>, ctx: RouteContext): Promise<Reply>;
}

/** Keeps each route's input type tied to its schema. */
export const route = <S extends TSchema>(r: Route<S>): Route<S> => r;
