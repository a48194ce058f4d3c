import { create, fromBinary } from "@bufbuild/protobuf";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { MemoryBus } from "@latchkey/runtime";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { describe, expect, it } from "vitest";
import { ratelimitEvents, SUBJECT_CHECKED } from "./events.ts";

// The encoder's bytes are checked against toBinary on random messages in test/in-memory/fast-codecs.test.ts.

const checked = (index: number, passed: boolean) =>
  create(RatelimitCheckedSchema, {
    requestId: "req_1",
    index,
    time: 1_767_225_600_500n,
    workspaceId: "ws_1",
    namespaceId: "rlns_1",
    identifier: "user é 🙂",
    passed,
    limit: 1_000_000_000_000n,
    remaining: passed ? 129n : 0n,
    reset: 1_767_225_660_000n,
    cost: 1n,
    overrideId: "rlor_1",
    latency: 0.0123,
  });

describe("ratelimitEvents", () => {
  it("hands each check to the sink as its message once the request is answered, id <requestId>:<index>", async () => {
    const sink = keepingEventSink();
    const { kept } = sink;
    const events = ratelimitEvents(new MemoryBus(), sink);
    const one = checked(3, true);
    const two = checked(4, false);
    events.checked(one);
    events.checked(two);
    // Not on the request's path: nothing yet.
    expect(kept).toEqual([]);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(kept.map((k) => [k.subject, k.id])).toEqual([
      [SUBJECT_CHECKED, "req_1:3"],
      [SUBJECT_CHECKED, "req_1:4"],
    ]);
    expect(kept[0]!.message).toBe(one);
    expect(fromBinary(RatelimitCheckedSchema, kept[1]!.bytes)).toEqual(two);
  });
});
