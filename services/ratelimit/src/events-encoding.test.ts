import { create, toBinary } from "@bufbuild/protobuf";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { MemoryBus } from "@latchkey/runtime";
import { WireWriter } from "@latchkey/runtime/wire/writer";
import { describe, expect, it } from "vitest";
import { type Checked, encodeChecked, ratelimitEvents, SUBJECT_CHECKED } from "./events.ts";

const checked = (over: Partial<Checked> = {}): Checked => ({
  requestId: "req_1",
  index: 3,
  time: 1_767_225_600_500,
  workspaceId: "ws_1",
  namespaceId: "rlns_1",
  identifier: "user é 🙂",
  passed: true,
  limit: 1_000_000_000_000,
  remaining: 129,
  reset: 1_767_225_660_000,
  cost: 1,
  overrideId: "rlor_1",
  latency: 0.0123,
  ...over,
});

const reference = (e: Checked) =>
  bytes(
    toBinary(
      RatelimitCheckedSchema,
      create(RatelimitCheckedSchema, {
        ...e,
        time: BigInt(e.time),
        limit: BigInt(e.limit),
        remaining: BigInt(e.remaining),
        reset: BigInt(e.reset),
        cost: BigInt(e.cost),
      }),
    ),
  );
/** Compared as byte lists: the writer answers a pooled Buffer, toBinary a Uint8Array. */
const bytes = (b: Uint8Array) => [...b];
const encoded = (e: Checked, w?: WireWriter) => bytes(encodeChecked(e, w));

describe("the hand-written RatelimitChecked encoder", () => {
  it("writes the same bytes as toBinary for an event with every field set", () => {
    expect(encoded(checked())).toEqual(reference(checked()));
  });

  it("leaves out default values as toBinary does", () => {
    const e = checked({
      requestId: "",
      index: 0,
      passed: false,
      remaining: 0,
      cost: 0,
      overrideId: "",
      latency: 0,
    });
    expect(encoded(e)).toEqual(reference(e));
  });

  it("writes negative, huge and -0 values as toBinary does", () => {
    const e = checked({ limit: -5, remaining: 2 ** 60, latency: -0, identifier: "x".repeat(300) });
    expect(encoded(e)).toEqual(reference(e));
  });

  it("starts over after finish, growing past its first capacity", () => {
    const w = new WireWriter(8);
    const long = checked({ identifier: "y".repeat(5000) });
    expect(encoded(long, w)).toEqual(reference(long));
    expect(encoded(checked(), w)).toEqual(reference(checked()));
  });

  it("writes strings around the short ASCII path's bounds as toBinary does", () => {
    const w = new WireWriter(8);
    for (const identifier of [
      "a",
      "x".repeat(127),
      "x".repeat(128),
      "é",
      `${"x".repeat(60)}é`,
      `é${"x".repeat(126)}`,
      "\u007f\u0080",
      "🙂",
      "\ud800",
    ]) {
      const e = checked({ identifier, requestId: identifier });
      expect(encoded(e, w)).toEqual(reference(e));
    }
  });
});

describe("ratelimitEvents to an in-process sink", () => {
  it("hands over each check's fields, which are RatelimitChecked's by name, and writes no bytes", async () => {
    const fields: [string, string, object][] = [];
    const events = ratelimitEvents(new MemoryBus(), {
      publish: () => {
        throw new Error("bytes were written for a sink that takes fields");
      },
      publishFields: (subject, id, f) => void fields.push([subject, id, f]),
      flush: async () => {},
      stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
    });
    const one = checked();
    const two = checked({ index: 4, passed: false, remaining: 0 });
    events.checked(one);
    events.checked(two);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(fields).toEqual([
      [SUBJECT_CHECKED, "req_1:3", one],
      [SUBJECT_CHECKED, "req_1:4", two],
    ]);
    // The analytics side reads them by the message's field names.
    expect(Object.keys(one).sort()).toEqual(RatelimitCheckedSchema.fields.map((f) => f.localName).sort());
  });
});
