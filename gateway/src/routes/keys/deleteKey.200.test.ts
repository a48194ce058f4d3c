import type { DeleteKeyRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.deleteKey answering 200", () => {
  const seen: DeleteKeyRequest[] = [];
  const h = harness({
    keys: {
      deleteKey(req) {
        seen.push(req);
        return {};
      },
    },
  });

  it.each([
    [{}, false],
    [{ permanent: false }, false],
    [{ permanent: true }, true],
  ])("deletes with %j as permanent %s and answers data {}", async (fields, permanent) => {
    seen.length = 0;
    const res = await h.post("keys.deleteKey", { keyId: "key_1", ...fields });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
    expect(seen.map((r) => [r.keyId, r.permanent])).toEqual([["key_1", permanent]]);
  });
});
