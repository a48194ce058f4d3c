import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BatchErrorSchema,
  type LimitBatchRequest,
  type LimitBatchResponse,
  LimitBatchResponseSchema,
  LimitBatchResultSchema,
  LimitRequestSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { errorDetailOf } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import { limit } from "./limit.ts";

/**
 * Many independent Limit calls in one: the gateway coalesces concurrent
 * requests so the cost of a call is shared. Each item answers as the unary
 * call would have, an error included.
 */
export function limitBatch(deps: RatelimitDeps) {
  const one = limit(deps);
  return async (req: LimitBatchRequest): Promise<LimitBatchResponse> => {
    const results = await Promise.all(
      req.items.map(async (item) => {
        try {
          const request = create(LimitRequestSchema, {
            caller: req.callers[item.callerIndex],
            check: item.request?.check,
            requestId: item.request?.requestId ?? "",
          });
          const response = await one(request);
          return create(LimitBatchResultSchema, { result: { case: "response", value: response } });
        } catch (err) {
          const e = ConnectError.from(err);
          const detail = errorDetailOf(e);
          if (e.code === Code.Internal || e.code === Code.Unknown)
            deps.log.error({ err }, "limit failed in a batch");
          return create(LimitBatchResultSchema, {
            result: {
              case: "error",
              value: create(BatchErrorSchema, {
                code: e.code,
                message: e.rawMessage,
                ...(detail ? { detail } : {}),
              }),
            },
          });
        }
      }),
    );
    return create(LimitBatchResponseSchema, { results });
  };
}
