import type { TSchema } from "@sinclair/typebox";
import { Meta, Pagination } from "./answers.ts";
import { problemKinds, problems } from "./problem.ts";
import type { Route } from "./route.ts";
import { aliasOf, OPERATIONS, type Operation, routes } from "./routes/index.ts";

/**
 * docs/openapi.json, built from the route table: every operation with its request schema and
 * example, the answer of every status it may give (the envelope around the route's `answer`, the
 * error body with its `type` URLs from problem.ts), the root-key permissions it needs, and an
 * example answer drawn from the answer's schema. `npm run openapi` writes it; a unit test fails
 * while the checked-in file differs; the gateway serves it at /openapi.json.
 */

type Json = Record<string, unknown>;

/** Statuses every operation may answer, besides its route's `errors`. */
const COMMON_ERRORS = [400, 401, 403, 413, 500, 503] as const;

const DESCRIPTIONS: Record<number, string> = {
  400: "The body is not JSON, does not fit the schema, or goes past a limit; `errors` lists each violation.",
  401: "No Authorization header, a malformed one, or an unknown or revoked root key; on the portal's session calls, no live portal session; on portal.exchangeCode, a code used, expired or unknown.",
  403: "The root key lacks a permission (the detail names it); on the portal's session calls, a scope not granted or a cross-origin change.",
  404: "The resource does not exist, or the root key may not see it (the two answer alike).",
  409: "A name or external id that must be unique is taken.",
  412: "A precondition failed (see the detail).",
  413: "The body is over 1 MiB; the connection is closed.",
  422: "The analytics query went past its time, row, byte or memory limit.",
  429: "Too many at once: the workspace's analytics queries, or one client's portal.exchangeCode attempts.",
  500: "Something went wrong on Latchkey's side; quote the requestId.",
  503: "A service behind the gateway is unavailable or did not answer in time; retry.",
};

/** Every problem `type` URL by status, from problem.ts: what a client may switch on. */
function problemTypes(): Map<number, { title: string; types: string[] }> {
  const all = [
    ...Object.values(problemKinds),
    problems.invalidInput("", []),
    problems.missingAuthorization(),
    problems.malformedAuthorization(),
    problems.unknownRootKey(),
    problems.tooLarge(0),
    problems.unavailable(),
    problems.unexpected(),
  ];
  const byStatus = new Map<number, { title: string; types: string[] }>();
  for (const k of all) {
    const entry = byStatus.get(k.status) ?? { title: k.title, types: [] };
    if (!entry.types.includes(k.type)) entry.types.push(k.type);
    byStatus.set(k.status, entry);
  }
  for (const entry of byStatus.values()) entry.types.sort();
  return byStatus;
}

/** A TypeBox schema as plain JSON Schema: its symbols dropped, the gateway's own keyword renamed. */
function plain(schema: TSchema): Json {
  return JSON.parse(
    JSON.stringify(schema, (key, value) => {
      if (value !== null && typeof value === "object" && !Array.isArray(value) && "maxJsonBytes" in value) {
        const { maxJsonBytes, ...rest } = value as Json;
        return { ...rest, "x-max-json-bytes": maxJsonBytes };
      }
      return key === "maxJsonBytes" ? undefined : value;
    }),
  ) as Json;
}

/** A value fitting `schema`, for the example answers: its `examples` first, else the plainest value. */
export function sample(schema: Json): unknown {
  if (Array.isArray(schema["examples"])) return schema["examples"][0];
  if (schema["const"] !== undefined) return schema["const"];
  if (Array.isArray(schema["enum"])) return schema["enum"][0];
  if (Array.isArray(schema["anyOf"])) return sample(schema["anyOf"][0] as Json);
  const type = Array.isArray(schema["type"]) ? schema["type"][0] : schema["type"];
  switch (type) {
    case "object": {
      const out: Json = {};
      for (const [name, property] of Object.entries((schema["properties"] ?? {}) as Record<string, Json>)) {
        out[name] = sample(property);
      }
      return out;
    }
    case "array":
      return schema["items"] ? [sample(schema["items"] as Json)] : [];
    case "string":
      return "string";
    case "integer":
    case "number":
      return (schema["minimum"] as number | undefined) ?? 0;
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return {};
  }
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function successSchema(route: Route): Json {
  const properties: Json = { meta: ref("Meta"), data: plain(route.answer) };
  if (route.paginated) properties["pagination"] = ref("Pagination");
  return {
    type: "object",
    additionalProperties: false,
    required: route.paginated ? ["meta", "data", "pagination"] : ["meta", "data"],
    properties,
  };
}

function errorSchema(status: number, types: string[]): Json {
  const error: Json = {
    type: "object",
    additionalProperties: false,
    required:
      status === 400
        ? ["title", "detail", "status", "type", "errors"]
        : ["title", "detail", "status", "type"],
    properties: {
      title: { type: "string" },
      detail: { type: "string" },
      status: { const: status },
      type: { type: "string", enum: types, description: "A documentation URL naming the problem." },
      ...(status === 400 ? { errors: { type: "array", items: ref("Violation") } } : {}),
    },
  };
  return {
    type: "object",
    additionalProperties: false,
    required: ["meta", "error"],
    properties: { meta: ref("Meta"), error },
  };
}

const code = (s: string) => `\`${s}\``;

function describe(operation: Operation, route: Route): string {
  const parts: string[] = [];
  const alias = aliasOf(operation);
  if (alias !== undefined) {
    parts.push(
      routes[alias] === route
        ? `Unkey's spelling of ${code(`/v2/${alias}`)}, served alike so Unkey's clients work unchanged.`
        : `Unkey's spelling of ${code(`/v2/${alias}`)}: the same request, answered in Unkey's shape.`,
    );
  }
  if (route.description) parts.push(route.description);
  if (route.auth === "portalSession") {
    parts.push(
      "**Portal session:** the `portal_session` cookie that `portal.exchangeCode` sets (as a browser and Unkey's SDK send it), no root key. A state-changing call from a browser must be same-origin (docs/portal.md).",
    );
  } else if (route.auth === "none") {
    parts.push("**No root key:** the request's own credential authenticates it.");
  } else {
    const { needs, also, masked } = route.rootKey;
    let access = `**Root key:** ${needs.map(code).join(" and ")}`;
    if (also) access += `; ${also}`;
    access += ".";
    if (masked) access += ` ${masked}`;
    parts.push(access);
  }
  return parts.join("\n\n");
}

function summary(operation: Operation): string {
  const method = operation.slice(operation.indexOf(".") + 1);
  const words = method.replace(/([A-Z])/g, " $1").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1) + (aliasOf(operation) ? " (alias)" : "");
}

function operationObject(operation: Operation): Json {
  const route: Route = routes[operation];
  const answer = { meta: { requestId: "req_2cGKbMxRyIzhCxo1" }, data: sample(plain(route.answer)) } as Json;
  if (route.paginated) answer["pagination"] = { hasMore: false };
  const responses: Json = {
    200: {
      description: "Success: `data`, always, in the envelope.",
      content: { "application/json": { schema: successSchema(route), example: answer } },
    },
  };
  const statuses = [...COMMON_ERRORS, ...(route.errors ?? [])].sort((a, b) => a - b);
  for (const status of statuses) responses[status] = { $ref: `#/components/responses/Error${status}` };
  const alias = aliasOf(operation);
  return {
    operationId: operation,
    tags: [operation.slice(0, operation.indexOf("."))],
    summary: summary(operation),
    description: describe(operation, route),
    ...(alias === undefined ? {} : { "x-alias-of": alias }),
    "x-root-key-permissions": route.rootKey.needs,
    ...(route.auth === "portalSession"
      ? { security: [{ portalSession: [] }] }
      : route.auth === "none"
        ? { security: [] }
        : {}),
    requestBody: {
      required: true,
      content: { "application/json": { schema: plain(route.schema), example: route.example } },
    },
    responses,
  };
}

const TAGS = [
  ["apis", "APIs: the groups keys belong to."],
  ["keys", "Keys: create, verify, update, credits, roles and permissions."],
  ["ratelimits", "Standalone rate limits and their overrides (Latchkey's spelling)."],
  ["ratelimit", "The same rate-limit operations at Unkey's spelling."],
  ["identities", "Identities: shared meta and rate limits for several keys."],
  ["permissions", "Permissions and roles."],
  ["analytics", "Verification analytics."],
  ["webhooks", "Webhooks: events of a workspace sent to URLs it registered, signed, with a delivery log."],
  [
    "portals",
    "Portals: the end-user portal in front of an API, managed with a root key (Latchkey's addition).",
  ],
  ["portal", "The end-user portal's sessions: minted with a root key, then used with the session's cookie."],
] as const;

/** The OpenAPI 3.1 document of the gateway's API. */
export function openApiDocument(): Json {
  const types = problemTypes();
  const paths: Json = {};
  for (const operation of OPERATIONS) paths[`/v2/${operation}`] = { post: operationObject(operation) };
  paths["/v2/liveness"] = {
    get: {
      operationId: "liveness",
      tags: ["service"],
      summary: "Liveness",
      description: "Answers while the gateway runs; needs no root key.",
      security: [],
      responses: {
        200: {
          description: "The gateway runs.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                additionalProperties: false,
                required: ["meta", "data"],
                properties: {
                  meta: ref("Meta"),
                  data: {
                    type: "object",
                    additionalProperties: false,
                    required: ["message"],
                    properties: { message: { const: "OK" } },
                  },
                },
              },
              example: { meta: { requestId: "req_2cGKbMxRyIzhCxo1" }, data: { message: "OK" } },
            },
          },
        },
      },
    },
  };
  const page = (summaryText: string, type: string, description: string) => ({
    get: {
      tags: ["service"],
      summary: summaryText,
      description,
      security: [],
      responses: { 200: { description: summaryText, content: { [type]: { schema: { type: "string" } } } } },
    },
  });
  paths["/openapi.json"] = page("This document", "application/json", "This document, as JSON.");
  paths["/openapi.yaml"] = page("This document as YAML", "application/yaml", "This document, as YAML.");
  paths["/docs"] = page(
    "The API reference",
    "text/html",
    "An interactive reference of this document (Scalar), served from the gateway itself: no CDN.",
  );

  const responses: Json = {};
  for (const status of [...types.keys()].sort((a, b) => a - b)) {
    const entry = types.get(status)!;
    responses[`Error${status}`] = {
      description: DESCRIPTIONS[status] ?? entry.title,
      content: {
        "application/json": {
          schema: errorSchema(status, entry.types),
          example: {
            meta: { requestId: "req_2cGKbMxRyIzhCxo1" },
            error: {
              title: entry.title,
              detail: DESCRIPTIONS[status] ?? entry.title,
              status,
              type: entry.types[0],
              ...(status === 400
                ? { errors: [{ location: "/body/apiId", message: "apiId is required.", fix: "Send apiId." }] }
                : {}),
            },
          },
        },
        "application/problem+json": { schema: errorSchema(status, entry.types) },
      },
    };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Latchkey API",
      version: "2",
      description:
        "Open-source, self-hostable API keys, speaking Unkey's v2 API: every operation is `POST /v2/<operation>` with a JSON body and `Authorization: Bearer <root key>`. A success answers `{meta, data}` (and `pagination` for lists), an error `{meta, error}` whose `type` is a documentation URL. Where Latchkey differs from Unkey, the operation says so; the whole list is in docs/api.md.",
      license: { name: "See the repository's LICENSE" },
    },
    servers: [{ url: "http://localhost:7070", description: "npm start" }],
    security: [{ rootKey: [] }],
    tags: [
      ...TAGS.map(([name, description]) => ({ name, description })),
      { name: "service", description: "Liveness and this document." },
    ],
    paths,
    components: {
      securitySchemes: {
        rootKey: {
          type: "http",
          scheme: "bearer",
          description:
            "A root key of one workspace (`lk_root_…`), holding permissions `<resource>.<id>.<action>` such as `api.*.create_key` or `api.<apiId>.verify_key`; `*` alone holds everything. Latchkey also takes `apis.` as an alias of `api.` in a permission.",
        },
        portalSession: {
          type: "apiKey",
          in: "cookie",
          name: "portal_session",
          description:
            "A portal session's access token, set by `portal.exchangeCode` (docs/portal.md): the `portal.*` session calls only.",
        },
      },
      schemas: {
        Meta: plain(Meta),
        Pagination: plain(Pagination),
        Violation: {
          type: "object",
          additionalProperties: false,
          required: ["location", "message"],
          properties: {
            location: { type: "string", description: "A JSON pointer into the request, under `/body`." },
            message: { type: "string" },
            fix: { type: "string" },
          },
        },
      },
      responses,
    },
  };
}

/** The document as written to docs/openapi.json and served at /openapi.json. */
export const openApiJson = () => `${JSON.stringify(openApiDocument(), null, 2)}\n`;
