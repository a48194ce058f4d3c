import { Code, ConnectError } from "@connectrpc/connect";
import type {
  BatchError,
  LimitBatchRequest,
  LimitBatchResponse,
  LimitBatchResult,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { errorDetailOf } from "@latchkey/runtime";
import { noLastNamespace, type ResolvedCheck } from "../checks.ts";
import type { RatelimitDeps } from "../deps.ts";
import type { CounterCheck } from "../limiter/sliding-windows.ts";
import { validCaller } from "../validate.ts";
import { limitAnswer, resolveLimit } from "./limit.ts";

/**
 * Many independent Limit calls in one: the gateway coalesces concurrent
 * requests so the cost of a call is shared. Each item answers as the unary
 * call would have, an error included.
 *
 * Built for the hot path: items whose namespace and overrides are cached are
 * resolved without a promise, only the others wait for their loads, and then
 * every resolved item is counted in one pass of the limiter, in item order.
 * Messages are written as literals rather than with create().
 */
export function limitBatch(deps: RatelimitDeps) {
  return async (req: LimitBatchRequest): Promise<LimitBatchResponse> => {
    const started = performance.now();
    const n = req.items.length;
    const results: LimitBatchResult[] = new Array(n);
    const resolved: (ResolvedCheck | undefined)[] = new Array(n);
    const loads: Promise<void>[] = [];
    const last = noLastNamespace();
    for (let i = 0; i < n; i++) {
      const item = req.items[i]!;
      try {
        const r = resolveLimit(deps, validCaller(req.callers[item.callerIndex]), item.request?.check, last);
        if (r instanceof Promise) {
          loads.push(
            r.then(
              (ok) => {
                resolved[i] = ok;
              },
              (err: unknown) => {
                results[i] = failed(deps, err, item.request?.requestId);
              },
            ),
          );
        } else resolved[i] = r;
      } catch (err) {
        results[i] = failed(deps, err, item.request?.requestId);
      }
    }
    if (loads.length > 0) await Promise.all(loads);

    const groups: CounterCheck[][] = [];
    const at: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = resolved[i];
      if (r === undefined) continue;
      groups.push([r.counter]);
      at.push(i);
    }
    const outcomes = await deps.limiter.apply(groups);
    for (let j = 0; j < at.length; j++) {
      const i = at[j]!;
      results[i] = {
        $typeName: "ratelimit.v1.LimitBatchResult",
        result: {
          case: "response",
          value: limitAnswer(deps, req.items[i]!.request, resolved[i]!, outcomes[j]![0]!, started, false),
        },
      };
    }
    return { $typeName: "ratelimit.v1.LimitBatchResponse", results };
  };
}

/** One item's error, as the unary call would have raised it; causes of internal errors are logged. */
function failed(deps: RatelimitDeps, err: unknown, requestId: string | undefined): LimitBatchResult {
  const e = ConnectError.from(err);
  if (e.code === Code.Internal || e.code === Code.Unknown) {
    deps.log.error({ err, requestId }, "limit failed in a batch");
  }
  const error: BatchError = {
    $typeName: "ratelimit.v1.BatchError",
    code: e.code,
    message: e.rawMessage,
    detail: errorDetailOf(e),
  };
  return { $typeName: "ratelimit.v1.LimitBatchResult", result: { case: "error", value: error } };
}
