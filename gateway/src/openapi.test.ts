import { readFileSync } from "node:fs";
import { validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { answeringEverything, harness } from "../testing/in-memory-gateway.ts";
import { answerContract } from "../testing/openapi-contract.ts";
import { openApiDocument, openApiJson } from "./openapi.ts";
import { OPERATIONS, routes } from "./routes/index.ts";

const checkedIn = readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8");
const doc = openApiDocument() as any;

describe("docs/openapi.json", () => {
  it("is what the route table generates (run `npm run openapi` after changing a route)", () => {
    expect(checkedIn).toBe(openApiJson());
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await validate(structuredClone(doc));
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("documents every operation of the route table, and nothing else under /v2 but liveness", () => {
    const documented = Object.keys(doc.paths).filter((p) => p.startsWith("/v2/"));
    expect(documented.sort()).toEqual([...OPERATIONS.map((o) => `/v2/${o}`), "/v2/liveness"].sort());
  });

  it("marks each ratelimit. path as the alias of its ratelimits. path", () => {
    for (const operation of OPERATIONS.filter((o) => o.startsWith("ratelimit."))) {
      const op = doc.paths[`/v2/${operation}`].post;
      expect(op["x-alias-of"]).toBe(operation.replace("ratelimit.", "ratelimits."));
      expect(op.summary).toMatch(/\(alias\)$/);
    }
    expect(doc.paths["/v2/ratelimits.limit"].post["x-alias-of"]).toBeUndefined();
  });

  it("gives each operation its root-key permissions, the bearer scheme and the error of every status", () => {
    expect(doc.components.securitySchemes.rootKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ rootKey: [] }]);
    for (const operation of OPERATIONS) {
      const op = doc.paths[`/v2/${operation}`].post;
      expect(op["x-root-key-permissions"]).toEqual(routes[operation].rootKey.needs);
      if (routes[operation].auth === undefined) {
        expect(op.description).toContain(routes[operation].rootKey.needs[0]);
      } else {
        // A portal session's call (its cookie) or the code exchange (no credential but the code).
        expect(op.security).toEqual(
          routes[operation].auth === "portalSession" ? [{ portalSession: [] }] : [],
        );
      }
      const statuses = Object.keys(op.responses).map(Number);
      expect(statuses).toEqual(
        [200, 400, 401, 403, 413, 500, 503, ...(routes[operation].errors ?? [])].sort((a, b) => a - b),
      );
    }
    const unauthorized = doc.components.responses.Error401.content["application/json"].schema;
    expect(unauthorized.properties.error.properties.type.enum).toEqual([
      "https://unkey.com/docs/errors/unkey/authentication/key_not_found",
      "https://unkey.com/docs/errors/unkey/authentication/malformed",
      "https://unkey.com/docs/errors/unkey/authentication/missing",
    ]);
  });

  it("says where Latchkey goes beyond Unkey", () => {
    const description = (operation: string) => doc.paths[`/v2/${operation}`].post.description as string;
    expect(description("analytics.getVerifications")).toContain("Beyond Unkey");
    expect(description("keys.verifyKey")).toContain("documents.*");
    expect(description("keys.verifyKey")).toContain("CREDITS_ASYNC_COMMIT");
    expect(description("ratelimit.limit")).toContain("Unkey's spelling of `/v2/ratelimits.limit`");
    expect(doc.components.securitySchemes.rootKey.description).toContain("`apis.` as an alias");
  });

  it("holds example requests each operation accepts and example answers that fit their schemas", async () => {
    const check = answerContract(doc);
    const h = harness(answeringEverything());
    for (const operation of OPERATIONS) {
      const op = doc.paths[`/v2/${operation}`].post;
      const example = op.requestBody.content["application/json"].example;
      expect(example).toEqual(routes[operation].example);
      expect((await h.post(operation, example)).status).toBe(200);
      expect([
        operation,
        check(operation, 200, op.responses["200"].content["application/json"].example),
      ]).toEqual([operation, []]);
    }
    for (const [name, response] of Object.entries<any>(doc.components.responses)) {
      const status = name.slice("Error".length);
      const operation = OPERATIONS.find((o) => doc.paths[`/v2/${o}`].post.responses[status]);
      expect([name, check(operation!, Number(status), response.content["application/json"].example)]).toEqual(
        [name, []],
      );
    }
  });

  it("refuses an answer with a field it does not promise, or without one it does", () => {
    const check = answerContract(doc);
    const meta = { requestId: "req_aaaaaaaaaaaaaaaa" };
    expect(check("keys.createKey", 200, { meta, data: { keyId: "key_1", key: "sk_1" } })).toEqual([]);
    expect(check("keys.createKey", 200, { meta, data: { keyId: "key_1", key: "sk_1", hash: "x" } })).toEqual([
      '/data must NOT have additional properties {"additionalProperty":"hash"}',
    ]);
    expect(check("keys.createKey", 200, { meta, data: { keyId: "key_1" } })).toEqual([
      `/data must have required property 'key' {"missingProperty":"key"}`,
    ]);
    expect(check("keys.createKey", 418, {})).toEqual(["keys.createKey does not document the status 418"]);
    expect(check("nothing.here", 200, {})).toBeUndefined();
  });
});

describe("the API reference the gateway serves", () => {
  const h = harness();

  it("serves every documented path that is not an operation", async () => {
    for (const path of Object.keys(doc.paths).filter((p) => doc.paths[p].get)) {
      const res = await h.get(path);
      expect([path, res.status]).toEqual([path, 200]);
    }
  });

  it("serves the document as JSON and as YAML, the same document", async () => {
    const json = await h.get("/openapi.json");
    expect(json.headers["content-type"]).toBe("application/json");
    expect(json.body).toEqual(doc);
    const yaml = await h.get("/openapi.yaml");
    expect(yaml.headers["content-type"]).toBe("application/yaml");
    expect(parse(yaml.body)).toEqual(doc);
  });

  it("serves /docs with a Content-Security-Policy that lets in nothing from elsewhere, and Scalar from node_modules", async () => {
    const page = await h.get("/docs");
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self';");
    expect(page.body).toContain('<script src="/docs/scalar.js"></script>');
    expect(page.body).not.toMatch(/https?:\/\//);
    const script = await h.get("/docs/scalar.js");
    expect(script.status).toBe(200);
    expect(script.headers["content-type"]).toBe("text/javascript");
    expect(String(script.body).length).toBeGreaterThan(1_000_000);
    expect((await h.get("/docs/init.js")).body).toContain('url: "/openapi.json"');
  });

  it("answers another method at these paths 405", async () => {
    const res = await h.request("POST", "/openapi.json", "{}", {});
    expect(res.status).toBe(405);
    expect(res.headers["allow"]).toBe("GET, HEAD");
  });
});
