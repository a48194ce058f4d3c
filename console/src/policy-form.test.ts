import { describe, expect, it } from "vitest";
import { fieldOfLocation, formOf, type PolicyDefinition, policyOf, problemsOf } from "./policy-form.ts";

const FULL: PolicyDefinition = {
  name: "admin",
  apiId: "api_1234",
  hosts: ["api.example.com", "*.example.org"],
  paths: ["/admin/**"],
  methods: ["POST", "DELETE", "PROPFIND"],
  key: { from: "header", name: "X-API-Key" },
  permissions: "admin.write OR admin.*",
  cost: 0,
  ratelimits: [{ name: "requests", cost: 2, limit: 100, duration: 60000 }, { name: "burst" }],
  tags: ["route=admin", "team ops"],
  upstream: { identity: true, meta: ["plan", "tier"] },
  stripKey: true,
  dryRun: true,
};

describe("the Policies page's form", () => {
  it("gives back every field of a policy it was filled from, the methods in checkbox order then the others", () => {
    const back = policyOf(formOf(FULL), false);
    expect(back).toEqual({ ...FULL, methods: ["POST", "DELETE", "PROPFIND"] });
    expect(problemsOf(formOf(FULL), false)).toEqual([]);
  });

  it("leaves out empty fields and blank rows, a bearer key, and a default's hosts, paths and methods", () => {
    const f = {
      ...formOf(),
      name: " orders ",
      apiId: "api_1",
      hosts: [" "],
      paths: ["/o/**", ""],
      methods: ["GET"],
    };
    expect(policyOf(f, false)).toEqual({
      name: "orders",
      apiId: "api_1",
      paths: ["/o/**"],
      methods: ["GET"],
    });
    expect(policyOf(f, true)).toEqual({ name: "orders", apiId: "api_1" });
  });

  it("names each bad field before anything is sent, with what to fix", () => {
    const f = {
      ...formOf(),
      name: "a b",
      hosts: ["api example"],
      paths: ["/ok", "orders"],
      otherMethods: "get",
      keyFrom: "query" as const,
      keyName: "",
      stripKey: true,
      cost: "-1",
      ratelimits: [{ name: "rq", cost: "1.5", limit: "", duration: "" }],
      upstreamMeta: "plan, bad field!",
    };
    expect(problemsOf(f, false)).toEqual([
      { field: "name", message: "Name: 1 to 64 letters, digits and _ . : - (no spaces)." },
      { field: "apiId", message: "API: give the id of one of this workspace's APIs (api_…)." },
      { field: "host-0", message: "Host 1: a host name such as api.example.com or *.example.com." },
      { field: "path-1", message: "Path 2: starts with / and holds no spaces, such as /v1/orders/**." },
      { field: "otherMethods", message: "Other methods: 'get' is no method; methods are in capitals." },
      { field: "keyName", message: "Key name: a key read from a query needs the query's name." },
      {
        field: "stripKey",
        message: "Strip the key: a key in a query cannot be stripped; read it from a header instead.",
      },
      { field: "cost", message: "Cost: a whole number of credits, 0 or more (0 checks without spending)." },
      {
        field: "ratelimit-0-name",
        message: "Rate limit 1 name: 3 to 255 characters, a limit of the key or its identity.",
      },
      { field: "ratelimit-0-cost", message: "Rate limit 1 cost: a whole number, 0 or more." },
      {
        field: "upstreamMeta",
        message: "Meta fields: names of letters, digits, _ and -, separated by commas.",
      },
    ]);
    // A default has no hosts, paths or methods to check.
    expect(problemsOf(f, true).map((p) => p.field)).not.toContain("host-0");
  });

  it("finds the field an API violation points at", () => {
    expect(
      [
        "/body/policy/name",
        "/body/policy/paths/1",
        "/body/policy/hosts",
        "/body/policy/key/name",
        "/body/policy/ratelimits/0/limit",
        "/body/policy/upstream/meta/2",
        "/body/position",
      ].map(fieldOfLocation),
    ).toEqual(["name", "path-1", "hosts", "keyName", "ratelimit-0-limit", "upstreamMeta", undefined]);
  });
});
