import { createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { roundRobin, urlsOf } from "./transport.ts";

describe("roundRobin", () => {
  it("sends each call to the next instance in turn", async () => {
    const served: string[] = [];
    const instance = (name: string) =>
      createRouterTransport((r) =>
        r.service(KeysService, {
          createApi() {
            served.push(name);
            return { apiId: `api_${name}` };
          },
        }),
      );
    const client = createClient(KeysService, roundRobin([instance("a"), instance("b")]));
    for (let i = 0; i < 5; i++) await client.createApi({ name: "x" });
    expect(served).toEqual(["a", "b", "a", "b", "a"]);
  });

  it("reads a comma-separated list of URLs, ignoring blanks", () => {
    expect(urlsOf("http://a:7071, http://b:7071,")).toEqual(["http://a:7071", "http://b:7071"]);
  });
});
