import { create } from "@bufbuild/protobuf";
import { KeySchema, type ListKeysRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

/** Three keys of one API, paged by the fake as the service pages them (cursor: the last key id). */
function keys() {
  const all = ["a", "b", "c"].map((id, i) =>
    create(KeySchema, {
      keyId: `key_${id}`,
      apiId: "api_1",
      start: `sk_${id}`,
      enabled: true,
      createdAt: BigInt(1_767_225_600_000 + i),
      credits: { remaining: 5n },
    }),
  );
  const seen: ListKeysRequest[] = [];
  const h = harness({
    keys: {
      listKeys(req) {
        seen.push(req);
        const start = req.cursor ? all.findIndex((k) => k.keyId === req.cursor) + 1 : 0;
        const end = start + (req.limit ?? 100);
        const hasMore = end < all.length;
        return {
          keys: all.slice(start, end),
          pagination: { cursor: hasMore ? all[end - 1]!.keyId : "", hasMore },
        };
      },
    },
  });
  return { h, seen };
}

describe("POST /v2/apis.listKeys answering 200", () => {
  it("answers the keys as data, as keys.getKey spells them, and paging in pagination {cursor, hasMore}", async () => {
    const { h, seen } = keys();
    const first = await h.post("apis.listKeys", { apiId: "api_1", limit: 2 });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      {
        keyId: "key_a",
        start: "sk_a",
        enabled: true,
        createdAt: 1_767_225_600_000,
        permissions: [],
        roles: [],
        credits: { remaining: 5 },
      },
      {
        keyId: "key_b",
        start: "sk_b",
        enabled: true,
        createdAt: 1_767_225_600_001,
        permissions: [],
        roles: [],
        credits: { remaining: 5 },
      },
    ]);
    expect(first.body.pagination).toEqual({ cursor: "key_b", hasMore: true });
    const last = await h.post("apis.listKeys", { apiId: "api_1", limit: 2, cursor: "key_b" });
    expect(last.body.data.map((k: { keyId: string }) => k.keyId)).toEqual(["key_c"]);
    expect(last.body.pagination).toEqual({ hasMore: false });
    expect(seen.map((r) => [r.apiId, r.limit, r.cursor])).toEqual([
      ["api_1", 2, ""],
      ["api_1", 2, "key_b"],
    ]);
  });

  it("asks for pages of 100 without decrypting when neither is given", async () => {
    const { h, seen } = keys();
    const res = await h.post("apis.listKeys", { apiId: "api_1" });
    expect(res.body.data).toHaveLength(3);
    expect(res.body.pagination).toEqual({ hasMore: false });
    expect(seen.map((r) => [r.limit, r.cursor, r.externalId, r.decrypt])).toEqual([
      [100, "", undefined, false],
    ]);
  });

  it("passes the externalId filter and decrypt to the service and accepts Unkey's revalidateKeysCache", async () => {
    const { h, seen } = keys();
    const res = await h.post("apis.listKeys", {
      apiId: "api_1",
      externalId: "user_42",
      decrypt: true,
      revalidateKeysCache: true,
    });
    expect(res.status).toBe(200);
    expect(seen.map((r) => [r.externalId, r.decrypt])).toEqual([["user_42", true]]);
  });

  it("answers an empty page as data [] and hasMore false", async () => {
    const h = harness({
      keys: { listKeys: () => ({ keys: [], pagination: { cursor: "", hasMore: false } }) },
    });
    const res = await h.post("apis.listKeys", { apiId: "api_1" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(res.body.pagination).toEqual({ hasMore: false });
  });
});
