import { create, toBinary } from "@bufbuild/protobuf";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { describe, expect, it } from "vitest";
import { decodeEvent, RATELIMIT_CHECKED } from "./events.ts";

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
