import { type Code, ConnectError } from "@connectrpc/connect";
import { type Caller, type ErrorDetail, ErrorDetailSchema } from "@latchkey/proto/common/v1/common_pb";

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

export interface BatchOptions {
  /** Batches out at once; calls that arrive meanwhile wait for the next one. Default 2. */
  maxInFlight?: number;
  /** Most items in one batch. Default 512. */
  maxBatch?: number;
}

/**
 * Coalesces concurrent unary calls of one workspace into one batched call
 * (docs/architecture.md: batching is what amortises the cost of a call). A
 * workspace's calls made in the same event-loop turn, or while `maxInFlight`
 * of its batches are out, travel together in its next batch; at low load a call leaves on the next turn (setImmediate),
 * so coalescing adds no timer. Each distinct caller crosses the wire once per
 * batch; items name theirs by index. `send` makes the batched call and answers
 * one result per item, in order.
 *
 * This is runtime's Batcher specialised for the gateway's hot path: the queue
 * is parallel arrays and each call settles its own promise straight from the
 * result (no per-call item objects, no second promise around the first).
 */
export function batchedByCaller<Req, Res, Item = { callerIndex: number; request: Req }>(
  name: string,
  send: (callers: Caller[], items: Item[]) => Promise<BatchResultLike<Res>[]>,
  options: BatchOptions & {
    /**
     * Makes each item (default: { callerIndex, request }). Given one that
     * writes the batch's item message as a literal, a call in process
     * (localTransport) hands the items over as they are, without create().
     */
    item?: (callerIndex: number, request: Req) => Item;
  } = {},
): (caller: Caller, request: Req) => Promise<Res> {
  const item = options.item ?? (plainItem as (callerIndex: number, request: Req) => Item);
  const maxInFlight = options.maxInFlight ?? 2;
  const maxBatch = options.maxBatch ?? 512;
  // A lane per workspace with calls waiting or out: a batch holds one workspace's calls, so another
  // workspace's slow items (keys to look up, a limit in a slow store) never hold its answers back, and
  // its batches out never take the slots of another's. A lane goes once it is idle.
  const lanes = new Map<string, (caller: Caller, request: Req) => Promise<Res>>();

  function lane(workspaceId: string): (caller: Caller, request: Req) => Promise<Res> {
    let callers: Caller[] = [];
    let requests: Req[] = [];
    let resolves: ((r: Res) => void)[] = [];
    let rejects: ((e: unknown) => void)[] = [];
    let inFlight = 0;
    let scheduled = false;

    function schedule() {
      if (scheduled || inFlight >= maxInFlight) return;
      scheduled = true;
      setImmediate(flush);
    }

    function flush() {
      scheduled = false;
      const n = Math.min(requests.length, maxBatch);
      if (n === 0) return;
      let batchCallers: Caller[];
      let batchRequests: Req[];
      let batchResolves: ((r: Res) => void)[];
      let batchRejects: ((e: unknown) => void)[];
      if (n === requests.length) {
        batchCallers = callers;
        batchRequests = requests;
        batchResolves = resolves;
        batchRejects = rejects;
        callers = [];
        requests = [];
        resolves = [];
        rejects = [];
      } else {
        batchCallers = callers.splice(0, n);
        batchRequests = requests.splice(0, n);
        batchResolves = resolves.splice(0, n);
        batchRejects = rejects.splice(0, n);
      }
      const distinct: Caller[] = [];
      const indexOf = new Map<Caller, number>();
      const items = new Array<Item>(n);
      for (let i = 0; i < n; i++) {
        const caller = batchCallers[i]!;
        let callerIndex = indexOf.get(caller);
        if (callerIndex === undefined) {
          callerIndex = distinct.length;
          distinct.push(caller);
          indexOf.set(caller, callerIndex);
        }
        items[i] = item(callerIndex, batchRequests[i]!);
      }
      inFlight++;
      let sent: Promise<BatchResultLike<Res>[]>;
      try {
        sent = send(distinct, items);
      } catch (err) {
        sent = Promise.reject(err);
      }
      sent
        .then(
          (results) => {
            for (let i = 0; i < n; i++) {
              const r = results[i];
              if (r === undefined) batchRejects[i]!(new Error(`${name} answered fewer results than items`));
              else if (r.result.case === "response") batchResolves[i]!(r.result.value);
              else if (r.result.case === "error") batchRejects[i]!(batchError(r.result.value));
              else batchRejects[i]!(new Error(`${name} answered an empty result`));
            }
          },
          (err: unknown) => {
            for (let i = 0; i < n; i++) batchRejects[i]!(err);
          },
        )
        .finally(() => {
          inFlight--;
          if (requests.length > 0) schedule();
          else if (inFlight === 0 && lanes.get(workspaceId) === call) lanes.delete(workspaceId);
        });
      if (requests.length > 0) schedule();
    }

    const call = (caller: Caller, request: Req) =>
      new Promise<Res>((resolve, reject) => {
        callers.push(caller);
        requests.push(request);
        resolves.push(resolve);
        rejects.push(reject);
        schedule();
      });
    return call;
  }

  const calls = (caller: Caller, request: Req): Promise<Res> => {
    let call = lanes.get(caller.workspaceId);
    if (call === undefined) {
      call = lane(caller.workspaceId);
      lanes.set(caller.workspaceId, call);
    }
    return call(caller, request);
  };
  return Object.assign(calls, { lanes: () => lanes.size });
}

const plainItem = (callerIndex: number, request: unknown) => ({ callerIndex, request });

/** A per-item batch failure as the unary call would have raised it, so problem.ts maps it the same way. */
function batchError(e: BatchErrorLike): ConnectError {
  return new ConnectError(
    e.message,
    e.code as Code,
    undefined,
    e.detail ? [{ desc: ErrorDetailSchema, value: e.detail }] : undefined,
  );
}
