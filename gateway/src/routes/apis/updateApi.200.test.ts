import type { UpdateApiRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness, WORKSPACE } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.updateApi answering 200", () => {
  const seen: UpdateApiRequest[] = [];
  const h = harness({
    keys: {
      updateApi(req) {
        seen.push(req);
        return {
          api: {
            id: req.apiId,
            name: req.name ?? "payments",
            keyFormat: req.keyFormat ?? "plain",
            leakPolicy: req.leakPolicy ?? "revoke",
            ipAllowList: req.ipAllowList?.values ?? [],
            expiringNoticeDays: req.expiringNoticeDays ?? 7,
            creditThresholds: req.creditThresholds?.values ?? [],
          },
        };
      },
    },
  });

  it("sends each field given and answers the API as it is now", async () => {
    const res = await h.post(
      "apis.updateApi",
      {
        apiId: "api_7Hq2",
        name: "billing",
        keyFormat: "checksum",
        leakPolicy: "flag",
        ipAllowList: ["203.0.113.0/24"],
        expiringNoticeDays: 14,
        creditThresholds: [50, 20],
      },
      { key: h.rootKey("api.api_7Hq2.update_api") },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: "api_7Hq2",
      name: "billing",
      keyFormat: "checksum",
      leakPolicy: "flag",
      ipAllowList: ["203.0.113.0/24"],
      expiringNoticeDays: 14,
      creditThresholds: [50, 20],
    });
    const req = seen.at(-1);
    expect(req?.creditThresholds?.values).toEqual([50, 20]);
    expect([req?.caller?.workspaceId, req?.caller?.permissions]).toEqual([
      WORKSPACE,
      ["api.api_7Hq2.update_api"],
    ]);
  });

  it("sends none of the fields omitted, and an empty list for ipAllowList []", async () => {
    const res = await h.post("apis.updateApi", { apiId: "api_7Hq2", ipAllowList: [] });
    expect(res.status).toBe(200);
    const req = seen.at(-1);
    expect(req?.ipAllowList?.values).toEqual([]);
    expect([req?.name, req?.keyFormat, req?.leakPolicy, req?.expiringNoticeDays]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    // An empty list is no list: the answer leaves it out, as apis.getApi does.
    expect(res.body.data.ipAllowList).toBeUndefined();
    await h.post("apis.updateApi", { apiId: "api_7Hq2", name: "renamed" });
    expect([seen.at(-1)?.ipAllowList, seen.at(-1)?.creditThresholds]).toEqual([undefined, undefined]);
  });

  it("sends an empty list for creditThresholds [] (none of the API's own), and answers without the field", async () => {
    const res = await h.post("apis.updateApi", { apiId: "api_7Hq2", creditThresholds: [] });
    expect(res.status).toBe(200);
    expect(seen.at(-1)?.creditThresholds?.values).toEqual([]);
    expect(res.body.data.creditThresholds).toBeUndefined();
  });
});
