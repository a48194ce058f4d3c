import { create, fromBinary } from "@bufbuild/protobuf";
import { type KeyVerified, KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { describe, expect, it } from "vitest";
import { KEY_VERIFIED, keyVerified, keyVerifiedEvent } from "./events.ts";

// The encoder's bytes are checked against toBinary on random messages in test/in-memory/fast-codecs.test.ts.

const full: KeyVerified = create(KeyVerifiedSchema, {
  requestId: "req_01HXYZABCDEFGHJK",
  time: 1_767_225_600_123n,
  workspaceId: "ws_default",
  apiId: "api_1234567890abcdef",
  keyId: "key_1234567890abcdef",
  identityId: "id_42",
  externalId: "user_ünïcødé_🔑",
  outcome: "USAGE_EXCEEDED",
  tags: ["path=/v1/things", "", "région=eu"],
  spentCredits: 1_000_000_000_000n,
  latency: 0.123,
});

function keeping() {
  const sink = keepingEventSink();
  return { sink, kept: sink.kept };
}

describe("keyVerified", () => {
  it("hands the sink the KeyVerified message as it is, with id <requestId>:<keyId>, and the type's bytes decode to it", () => {
    const { sink, kept } = keeping();
    keyVerified({ events: sink }, full);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.subject).toBe(KEY_VERIFIED);
    expect(kept[0]!.id).toBe("req_01HXYZABCDEFGHJK:key_1234567890abcdef");
    expect(kept[0]!.message).toBe(full);
    expect(fromBinary(KeyVerifiedSchema, kept[0]!.bytes)).toEqual(full);
    expect(keyVerifiedEvent.subject).toBe("events.keys.verified");
  });

  it("makes up an id for a verification without a request id", () => {
    const { sink, kept } = keeping();
    keyVerified({ events: sink }, { ...full, requestId: "" });
    expect(kept[0]!.id).toMatch(/^ver_/);
  });
});
