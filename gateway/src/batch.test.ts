import { Code, ConnectError } from "@connectrpc/connect";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { type BatchOptions, type BatchResultLike, batchedByCaller } from "./batch.ts";

const callerA = {
  $typeName: "common.v1.Caller",
  workspaceId: "ws_a",
  rootKeyId: "rk_a",
  permissions: [],
  requestId: "",
} as Caller;
/** Another root key of the same workspace. */
const callerB = {
  $typeName: "common.v1.Caller",
  workspaceId: "ws_a",
  rootKeyId: "rk_b",
  permissions: [],
  requestId: "",
} as Caller;
/** A root key of another workspace. */
const callerOther = {
  $typeName: "common.v1.Caller",
  workspaceId: "ws_other",
  rootKeyId: "rk_other",
  permissions: [],
  requestId: "",
} as Caller;

interface Sent {
  callers: Caller[];
  items: { callerIndex: number; request: string }[];
  answer(results: BatchResultLike<string>[]): void;
  fail(err: unknown): void;
}

/** A batched call that waits until the test answers it, recording what each batch carried. */
function recording(options?: BatchOptions) {
  const sent: Sent[] = [];
  const call = batchedByCaller<string, string>(
    "TestBatch",
    (callers, items) =>
      new Promise((answer, fail) => {
        sent.push({ callers, items, answer, fail });
      }),
    options,
  );
  return { sent, call };
}

const echo = (batch: Sent) =>
  batch.answer(batch.items.map((i) => ({ result: { case: "response", value: `${i.request}!` } })));

const turn = () => new Promise((r) => setImmediate(r));

describe("batchedByCaller", () => {
  it("sends the calls of one turn as one batch, each caller once, and answers each call with its own result", async () => {
    const { sent, call } = recording();
    const answers = Promise.all([call(callerA, "a1"), call(callerB, "b1"), call(callerA, "a2")]);
    await turn();
    expect(sent).toHaveLength(1);
    expect(sent[0]!.callers).toEqual([callerA, callerB]);
    expect(sent[0]!.items).toEqual([
      { callerIndex: 0, request: "a1" },
      { callerIndex: 1, request: "b1" },
      { callerIndex: 0, request: "a2" },
    ]);
    echo(sent[0]!);
    expect(await answers).toEqual(["a1!", "b1!", "a2!"]);
  });

  it("makes each item with the given maker, so a batch can carry messages as they are", async () => {
    const items: unknown[][] = [];
    const call = batchedByCaller<string, string, { $typeName: "test.Item"; at: number; request: string }>(
      "TestBatch",
      async (_, batch) => {
        items.push(batch);
        return batch.map((i) => ({ result: { case: "response", value: `${i.request}@${i.at}` } }));
      },
      { item: (at, request) => ({ $typeName: "test.Item", at, request }) },
    );
    expect(await Promise.all([call(callerA, "a"), call(callerB, "b")])).toEqual(["a@0", "b@1"]);
    expect(items).toEqual([
      [
        { $typeName: "test.Item", at: 0, request: "a" },
        { $typeName: "test.Item", at: 1, request: "b" },
      ],
    ]);
  });

  it("keeps at most maxInFlight batches out; calls made meanwhile leave together when one returns", async () => {
    const { sent, call } = recording({ maxInFlight: 2 });
    const first = call(callerA, "1");
    await turn();
    const second = call(callerA, "2");
    await turn();
    const waiting = [call(callerA, "3"), call(callerB, "4"), call(callerA, "5")];
    await turn();
    await turn();
    expect(sent.map((b) => b.items.length)).toEqual([1, 1]);
    echo(sent[0]!);
    expect(await first).toBe("1!");
    await turn();
    await turn();
    expect(sent.map((b) => b.items.map((i) => i.request))).toEqual([["1"], ["2"], ["3", "4", "5"]]);
    echo(sent[1]!);
    echo(sent[2]!);
    expect(await second).toBe("2!");
    expect(await Promise.all(waiting)).toEqual(["3!", "4!", "5!"]);
  });

  it("splits a queue longer than maxBatch into batches in order", async () => {
    const { sent, call } = recording({ maxBatch: 2, maxInFlight: 10 });
    const answers = Promise.all(["1", "2", "3", "4", "5"].map((r) => call(callerA, r)));
    await turn();
    await turn();
    await turn();
    expect(sent.map((b) => b.items.map((i) => i.request))).toEqual([["1", "2"], ["3", "4"], ["5"]]);
    for (const b of sent) echo(b);
    expect(await answers).toEqual(["1!", "2!", "3!", "4!", "5!"]);
  });

  it("rejects only the item that failed, with the error the unary call would have raised", async () => {
    const { sent, call } = recording();
    const ok = call(callerA, "ok");
    const failed = call(callerA, "bad");
    const empty = call(callerA, "empty");
    const missing = call(callerA, "missing");
    await turn();
    sent[0]!.answer([
      { result: { case: "response", value: "fine" } },
      {
        result: {
          case: "error",
          value: {
            code: Code.NotFound,
            message: "no such key",
            detail: { reason: ErrorReason.KEY_NOT_FOUND } as never,
          },
        },
      },
      { result: { case: undefined } },
    ]);
    expect(await ok).toBe("fine");
    const err = await failed.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect((err as ConnectError).rawMessage).toBe("no such key");
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.KEY_NOT_FOUND);
    await expect(empty).rejects.toThrow("TestBatch answered an empty result");
    await expect(missing).rejects.toThrow("TestBatch answered fewer results than items");
  });

  it("rejects every call of a failed batch, and the next calls still travel", async () => {
    const { sent, call } = recording();
    const lost = [call(callerA, "1"), call(callerB, "2")];
    await turn();
    sent[0]!.fail(new ConnectError("connection refused", Code.Unavailable));
    for (const p of lost) await expect(p).rejects.toThrow("connection refused");
    const later = call(callerA, "3");
    await turn();
    echo(sent[1]!);
    expect(await later).toBe("3!");
  });

  it("keeps each workspace's calls in batches of their own, answered as their batch returns, whatever another's is doing", async () => {
    const { sent, call } = recording();
    const slow = call(callerA, "a1");
    const other = call(callerOther, "o1");
    await turn();
    expect(sent.map((b) => [b.callers.map((c) => c.workspaceId), b.items.map((i) => i.request)])).toEqual([
      [["ws_a"], ["a1"]],
      [["ws_other"], ["o1"]],
    ]);
    // The other workspace's batch returns while ws_a's is still out.
    echo(sent[1]!);
    expect(await other).toBe("o1!");
    echo(sent[0]!);
    expect(await slow).toBe("a1!");
  });

  it("counts maxInFlight per workspace: one with its batches all out holds no other workspace's calls", async () => {
    const { sent, call } = recording({ maxInFlight: 1 });
    const held = call(callerA, "a1");
    await turn();
    const waiting = call(callerA, "a2");
    const other = call(callerOther, "o1");
    await turn();
    // ws_a's second call waits for its first batch; the other workspace's leaves at once.
    expect(sent.map((b) => b.items.map((i) => i.request))).toEqual([["a1"], ["o1"]]);
    echo(sent[1]!);
    expect(await other).toBe("o1!");
    echo(sent[0]!);
    expect(await held).toBe("a1!");
    await turn();
    await turn();
    echo(sent[2]!);
    expect(await waiting).toBe("a2!");
  });

  it("keeps a lane only for a workspace with calls waiting or out", async () => {
    const { sent, call } = recording();
    const lanes = (call as unknown as { lanes(): number }).lanes;
    const answers = Promise.all([call(callerA, "a"), call(callerOther, "o")]);
    expect(lanes()).toBe(2);
    await turn();
    for (const b of sent) echo(b);
    await answers;
    await turn();
    expect(lanes()).toBe(0);
  });
});
