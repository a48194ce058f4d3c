import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import {
  type BatchError,
  BatchErrorSchema,
  type VerifyKeyBatchItem,
  type VerifyKeyBatchRequest,
  type VerifyKeyBatchResponse,
  type VerifyKeyBatchResult,
} from "@latchkey/proto/keys/v1/keys_pb";
import { errorDetailOf, invalidInput, isTransientError } from "@latchkey/runtime";
import type { KeysDeps } from "../deps.ts";
import type { Spend } from "../store/keys-store.ts";
import { answersInBinary, encodedAnswer } from "./batch-wire.ts";
import { type AppliedLimit, LimitCollector, type LimitsVerdict } from "./named-limits.ts";
import { SpendCollector } from "./spend-collector.ts";
import { type Facts, type Verified, type VerifySteps, verified } from "./verify.ts";

/**
 * Many verifications in one call (the gateway coalesces concurrent requests).
 * Items run concurrently, each exactly as verifyKey would, except that their
 * named rate limits go to the ratelimit service in one CheckNamedLimits call
 * (LimitCollector) and their credit spends are decided together in one
 * statement (SpendCollector, through the instance's SpendQueue, which shares
 * it with batches in flight at the same time): one result per item, in order, and spends of
 * one key succeed in item order. An item's error becomes its BatchError and
 * never fails the batch. Results are message literals, as verify()'s answers
 * are, so a call in process (`npm start`) hands them over without create().
 */
export async function verifyBatch(
  deps: KeysDeps,
  req: VerifyKeyBatchRequest,
  ctx?: HandlerContext,
): Promise<VerifyKeyBatchResponse> {
  const spends = new SpendCollector(deps.spends, req.items.length);
  const limits = new LimitCollector(deps, req.items.length);
  const items = await Promise.all(
    req.items.map((item, i) => verifyItem(deps, req.callers, item, new ItemSteps(spends, limits, i))),
  );
  const results = items.map((item) => item.result);
  if (!answersInBinary(ctx)) return { $typeName: "keys.v1.VerifyKeyBatchResponse", results };
  // Serialised to binary: the results go pre-encoded, the same bytes at a fraction of the cost.
  return encodedAnswer(results, (i, response) => {
    const facts = items[i]!.facts;
    return facts === undefined ? undefined : deps.verification.segments(facts, response);
  });
}

/** One item's result, with the facts of its answer when it has a key the caller may see. */
interface ItemResult {
  result: VerifyKeyBatchResult;
  facts: Facts | undefined;
}

/** One item's shared steps: its place in the batch's limit check and credit spends. */
class ItemSteps implements VerifySteps {
  constructor(
    private readonly spends: SpendCollector,
    private readonly limits: LimitCollector,
    private readonly index: number,
  ) {}

  checkLimits(workspaceId: string, limits: readonly AppliedLimit[]): Promise<LimitsVerdict> {
    return this.limits.check(this.index, workspaceId, limits);
  }

  spend(workspaceId: string, keyId: string, cost: number): Promise<Spend | undefined> {
    // An item at its credit step is past its rate-limit step: the others' limits must not wait
    // for it to finish, while it waits for their spends (a batch mixing the two would hang).
    this.limits.done(this.index);
    return this.spends.spend(this.index, workspaceId, keyId, cost);
  }

  /** An item that never reached its rate-limit or credit step must not hold up the others'. */
  done(): void {
    this.limits.done(this.index);
    this.spends.done(this.index);
  }
}

async function verifyItem(
  deps: KeysDeps,
  callers: Caller[],
  item: VerifyKeyBatchItem,
  steps: ItemSteps,
): Promise<ItemResult> {
  try {
    const caller = callers[item.callerIndex];
    if (!caller || caller.workspaceId === "") {
      throw invalidInput("/callerIndex", `caller index ${item.callerIndex} names no caller of this batch`);
    }
    if (!item.request) throw invalidInput("/request", "a batch item needs a request");
    const { result, facts }: Verified = await verified(deps, caller, item.request, steps);
    return {
      result: { $typeName: "keys.v1.VerifyKeyBatchResult", result: { case: "response", value: result } },
      facts,
    };
  } catch (err) {
    return {
      result: {
        $typeName: "keys.v1.VerifyKeyBatchResult",
        result: { case: "error", value: batchError(deps, err, item.request?.requestId) },
      },
      facts: undefined,
    };
  } finally {
    steps.done();
  }
}

function batchError(deps: KeysDeps, err: unknown, requestId: string | undefined): BatchError {
  const detail = errorDetailOf(err);
  if (err instanceof ConnectError && detail) {
    return create(BatchErrorSchema, { code: err.code, message: err.rawMessage, detail });
  }
  // A service verification asks (identity, ratelimit) did not answer in time or could not be reached,
  // or its database connection broke: the item is unavailable (503 at the gateway), as the same failure
  // of a unary call is (callErrorOf), not a 500.
  if (
    isTransientError(err) ||
    (err instanceof ConnectError && (err.code === Code.DeadlineExceeded || err.code === Code.Unavailable))
  ) {
    deps.log.warn(
      { err: (err as Error).message, requestId },
      "verification in a batch: a dependency did not answer",
    );
    return create(BatchErrorSchema, {
      code: Code.Unavailable,
      message: "A database or service the verification depends on did not answer in time; retry shortly.",
      detail: { reason: ErrorReason.UNAVAILABLE },
    });
  }
  // Not a domain error: the cause stays in the log, the item says nothing specific.
  deps.log.error({ err, requestId }, "verification in a batch failed");
  return create(BatchErrorSchema, {
    code: Code.Internal,
    message: "internal error",
    detail: { reason: ErrorReason.UNSPECIFIED },
  });
}
