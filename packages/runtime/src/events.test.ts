import { create, toBinary } from "@bufbuild/protobuf";
import { EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import { describe, expect, it } from "vitest";
import { encodeEventBatch } from "./events.ts";

describe("encodeEventBatch", () => {
  const cases: Record<string, { id: string; data: Uint8Array }[]> = {
    "no events": [],
    "one event": [{ id: "req_1:key_1", data: new Uint8Array([1, 2, 3]) }],
    "an empty event": [{ id: "", data: new Uint8Array() }],
    "an id without data": [{ id: "req_2", data: new Uint8Array() }],
    "non-ASCII ids": [{ id: "req_✓:ключ", data: new Uint8Array([0xff]) }],
    "lengths past one varint byte": [
      { id: "x".repeat(200), data: new Uint8Array(300).fill(7) },
      { id: "y", data: new Uint8Array(70_000).fill(9) },
    ],
  };
  it.each(Object.entries(cases))("writes %s exactly as protobuf-es does", (_name, events) => {
    const expected = toBinary(EventBatchSchema, create(EventBatchSchema, { events }));
    expect([...encodeEventBatch(events)]).toEqual([...expected]);
  });
});
