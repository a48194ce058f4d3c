import { create, toBinary } from "@bufbuild/protobuf";
import { EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { describe, expect, it } from "vitest";
import { decodeEvent, decodeMessage, KEY_VERIFIED, RATELIMIT_CHECKED } from "./events.ts";

describe("decodeEvent", () => {
  it("keeps the checks of one multiLimit apart: each row is keyed by its message id", () => {
    const check = (index: number) =>
      toBinary(
        RatelimitCheckedSchema,
        create(RatelimitCheckedSchema, { requestId: "req_multi", index, workspaceId: "ws_1", passed: true }),
      );
    const a = decodeEvent(RATELIMIT_CHECKED, "req_multi:0", check(0));
    const b = decodeEvent(RATELIMIT_CHECKED, "req_multi:1", check(1));
    expect(a.kind === "ratelimit" && a.row.requestId).toBe("req_multi:0");
    expect(b.kind === "ratelimit" && b.row.requestId).toBe("req_multi:1");
  });
});

describe("decodeMessage", () => {
  const verified = (requestId: string) =>
    toBinary(
      KeyVerifiedSchema,
      create(KeyVerifiedSchema, { requestId, workspaceId: "ws_1", outcome: "VALID" }),
    );

  it("answers every event of a batch, in order, each keyed by its own id", () => {
    const data = toBinary(
      EventBatchSchema,
      create(EventBatchSchema, {
        events: [
          { id: "req_1:key_1", data: verified("req_1") },
          { id: "req_2:key_1", data: verified("") },
        ],
      }),
    );
    const events = decodeMessage(KEY_VERIFIED, "evb_x:0:events.keys.verified", data, true);
    expect(events.map((e) => (e.kind === "verification" ? e.row.requestId : e.kind))).toEqual([
      "req_1",
      // An event without a request id is keyed by its own id, not the message's.
      "req_2:key_1",
    ]);
  });

  it("answers a message without the batch header as one event", () => {
    const events = decodeMessage(KEY_VERIFIED, "req_3:key_1", verified(""), false);
    expect(events.map((e) => (e.kind === "verification" ? e.row.requestId : e.kind))).toEqual([
      "req_3:key_1",
    ]);
  });

  it("throws on a batch whose bytes are not an EventBatch", () => {
    expect(() => decodeMessage(KEY_VERIFIED, "m", new Uint8Array([0xff, 0xff, 0xff]), true)).toThrow();
  });
});
