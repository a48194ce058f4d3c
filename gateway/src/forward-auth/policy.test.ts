import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_POLICY_FILE_BYTES, parsePolicies, policiesFromEnv, readPolicyFile } from "./file.ts";

const set = (yaml: string) => parsePolicies(yaml, "policies.yaml");

describe("policy matching", () => {
  const policies = set(`
policies:
  - { name: admin-write, apiId: api_a, hosts: ["api.example.com"], paths: ["/admin/**"], methods: [POST, DELETE] }
  - { name: tenants, apiId: api_a, hosts: ["*.example.com"], paths: ["/t/*/items"] }
  - { name: v1, apiId: api_b, paths: ["/v1/**"] }
default: { name: fallback, apiId: api_c }
`);
  const name = (method: string, host: string, path: string) => policies.match(method, host, path)?.name;

  it("takes the first policy whose host, path and method all match", () => {
    expect(name("POST", "api.example.com", "/admin/users")).toBe("admin-write");
    expect(name("GET", "api.example.com", "/admin/users")).toBe("fallback");
    expect(name("POST", "other.example.com", "/admin/users")).toBe("fallback");
  });

  it("reads hosts without case or port, a * host label as one or more labels", () => {
    expect(name("POST", "API.Example.COM:8443", "/admin")).toBe("admin-write");
    expect(name("GET", "eu.shop.example.com", "/t/acme/items")).toBe("tenants");
    expect(name("GET", "example.com", "/t/acme/items")).toBe("fallback");
  });

  it("reads * in a path as one segment and a trailing ** as the rest, none included", () => {
    expect(name("GET", "a.example.com", "/t/acme/items")).toBe("tenants");
    expect(name("GET", "a.example.com", "/t/acme/x/items")).toBe("fallback");
    expect(name("GET", "h", "/v1")).toBe("v1");
    expect(name("GET", "h", "/v1/a/b/c")).toBe("v1");
    expect(name("GET", "h", "/v10")).toBe("fallback");
  });

  it("matches nothing without a default when no policy covers the request", () => {
    expect(
      set("policies: [{ name: only, apiId: api_a, paths: ['/x'] }]").match("GET", "h", "/y"),
    ).toBeUndefined();
  });

  it("takes pattern characters of regular expressions literally", () => {
    const p = set("policies: [{ name: dots, apiId: api_a, hosts: ['a.b.c'], paths: ['/a.b'] }]");
    expect(p.match("GET", "a.b.c", "/a.b")?.name).toBe("dots");
    expect(p.match("GET", "aXb.c", "/a.b")).toBeUndefined();
    expect(p.match("GET", "a.b.c", "/aXb")).toBeUndefined();
  });
});

describe("the policy file", () => {
  it("names the place and the rule a bad file breaks", () => {
    expect(() => set("policies: [{ name: x, apiId: api_a, cost: -1 }]")).toThrow(
      /FORWARD_AUTH_POLICIES_FILE 'policies.yaml' is not a valid policy file:\n {2}\/policies\/0\/cost: /,
    );
    expect(() => set("policies: [{ name: x, apiId: api_a, surprise: 1 }]")).toThrow(
      /\/policies\/0.*surprise/,
    );
    expect(() => set("policies: [{ name: x }]")).toThrow(/\/policies\/0.*apiId/);
    expect(() => set("policies: [{ name: x, apiId: a }, { name: x, apiId: b }]")).toThrow(
      "/policies/1/name: the name 'x' is used twice",
    );
    expect(() => set("policies: [{ name: x, apiId: a, key: { from: header } }]")).toThrow(
      "/policies/0/key/name: a key read from a header needs the header's name",
    );
    expect(() =>
      set("policies: [{ name: x, apiId: a, key: { from: query, name: k }, stripKey: true }]"),
    ).toThrow("/policies/0/stripKey: a key in a query cannot be stripped");
    expect(() => set("policies: [ { name: x")).toThrow(/is not YAML or JSON/);
    expect(() => set("[]")).toThrow(/is not a valid policy file/);
  });

  it("takes JSON as well as YAML", () => {
    expect(set('{"policies":[{"name":"j","apiId":"api_a"}]}').match("GET", "h", "/")?.name).toBe("j");
  });

  it("refuses more than 100 policies", () => {
    const many = Array.from({ length: 101 }, (_, i) => ({ name: `p${i}`, apiId: "api_a" }));
    expect(() => set(JSON.stringify({ policies: many }))).toThrow(/\/policies: /);
  });

  it("refuses a file that is missing or larger than its bound", () => {
    const dir = mkdtempSync(join(tmpdir(), "policies-"));
    expect(() => readPolicyFile(join(dir, "none.yaml"))).toThrow(/none.yaml' cannot be read: ENOENT/);
    const big = join(dir, "big.yaml");
    writeFileSync(big, `# ${"x".repeat(MAX_POLICY_FILE_BYTES)}\npolicies: []\n`);
    expect(() => readPolicyFile(big)).toThrow(/more than the 1048576 allowed/);
  });
});

describe("FORWARD_AUTH_POLICIES_FILE and FORWARD_AUTH_WORKSPACE_ID", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("are both set or neither", () => {
    vi.stubEnv("FORWARD_AUTH_POLICIES_FILE", "/nowhere.yaml");
    expect(() => policiesFromEnv()).toThrow(/go together/);
    vi.unstubAllEnvs();
    expect(policiesFromEnv().of("ws_any").match("GET", "h", "/")).toBeUndefined();
  });

  it("apply the file's policies to the one workspace named, and none to any other", () => {
    const dir = mkdtempSync(join(tmpdir(), "policies-"));
    const file = join(dir, "p.yaml");
    writeFileSync(file, "policies: [{ name: mine, apiId: api_a }]\n");
    vi.stubEnv("FORWARD_AUTH_POLICIES_FILE", file);
    vi.stubEnv("FORWARD_AUTH_WORKSPACE_ID", "ws_mine");
    const source = policiesFromEnv();
    expect(source.of("ws_mine").match("GET", "h", "/")?.name).toBe("mine");
    expect(source.of("ws_other").match("GET", "h", "/")).toBeUndefined();
  });
});
