import { type Code, ConnectError } from "@connectrpc/connect";
import { type Caller, type ErrorDetail, ErrorDetailSchema } from "@latchkey/proto/common/v1/common_pb";
import { Batcher } from "@latchkey/runtime";

/** A per-item failure inside a batch (keys.v1.BatchError and ratelimit.v1.BatchError have this shape). */
interface BatchErrorLike {
  code: number;
  message: string;
  detail?: ErrorDetail;
}

/** One item's answer in a batch response: the unary response or the error the unary call would have raised. */
export interface BatchResultLike<R> {
  result:
    | { case: "response"; value: R }
    | { case: "error"; value: BatchErrorLike }
    | { case: undefined; value?: undefined };
}

/**
 * Coalesces concurrent unary calls into one batched call (PERFORMANCE.md:
 * batching is what amortises the cost of a call). Each distinct caller
 * crosses the wire once per batch; items name theirs by index. `send` makes
 * the batched call and answers one result per item, in order.
 */
export function batchedByCaller<Req, Res>(
  name: string,
  send: (
    callers: Caller[],
    items: { callerIndex: number; request: Req }[],
  ) => Promise<BatchResultLike<Res>[]>,
  options: { maxInFlight?: number } = {},
): (caller: Caller, request: Req) => Promise<Res> {
  const batcher = new Batcher<{ caller: Caller; request: Req }, BatchResultLike<Res>>((items) => {
    const callers: Caller[] = [];
    const indexOf = new Map<Caller, number>();
    const batch = new Array<{ callerIndex: number; request: Req }>(items.length);
    for (let i = 0; i < items.length; i++) {
      const { caller, request } = items[i]!;
      let callerIndex = indexOf.get(caller);
      if (callerIndex === undefined) {
        callerIndex = callers.length;
        callers.push(caller);
        indexOf.set(caller, callerIndex);
      }
      batch[i] = { callerIndex, request };
    }
    return send(callers, batch);
  }, options);
  return async (caller, request) => {
    const r = await batcher.call({ caller, request });
    if (r.result.case === "response") return r.result.value;
    if (r.result.case === "error") throw batchError(r.result.value);
    throw new Error(`${name} answered an empty result`);
  };
}

/** A per-item batch failure as the unary call would have raised it, so problem.ts maps it the same way. */
function batchError(e: BatchErrorLike): ConnectError {
  return new ConnectError(
    e.message,
    e.code as Code,
    undefined,
    e.detail ? [{ desc: ErrorDetailSchema, value: e.detail }] : undefined,
  );
}
