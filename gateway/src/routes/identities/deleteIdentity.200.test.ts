import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.deleteIdentity answering 200", () => {
  it("answers meta and an empty data", async () => {
    const deleted: string[] = [];
    const h = harness({
      identity: {
        deleteIdentity(req) {
          deleted.push(req.identity);
          return {};
        },
      },
    });
    const res = await h.post("identities.deleteIdentity", { identity: "user_42" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ meta: { requestId: expect.stringMatching(/^req_/) }, data: {} });
    expect(deleted).toEqual(["user_42"]);
  });
});
