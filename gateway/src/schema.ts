import type { Violation } from "@latchkey/runtime";
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { Ajv, type ErrorObject, type FuncKeywordDefinition } from "ajv";
import { MAX_META_BYTES } from "./limits.ts";

/**
 * Request schemas are written with TypeBox (static types for free) and
 * compiled once by Ajv when the gateway starts. Limits come from the
 * contract (docs/limits.md), else from Unkey's field constraints.
 */
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });

/**
 * `maxJsonBytes`: the value's JSON may be at most this many bytes of UTF-8. For meta, stored as
 * given and returned by every verification. The body is at most MAX_DEPTH deep by then
 * (limits.ts), so JSON.stringify cannot overflow.
 */
const maxJsonBytes: FuncKeywordDefinition = {
  keyword: "maxJsonBytes",
  type: "object",
  schemaType: "number",
  errors: true,
  validate: function check(limit: number, data: unknown) {
    const bytes = Buffer.byteLength(JSON.stringify(data) ?? "");
    if (bytes <= limit) return true;
    (check as { errors?: Partial<ErrorObject>[] }).errors = [
      { keyword: "maxJsonBytes", params: { limit, bytes }, message: "is too large" },
    ];
    return false;
  },
};
ajv.addKeyword(maxJsonBytes);

/** The largest integer JSON.parse keeps exactly; int64 fields above it would be silently rounded. */
const MAX_INT = Number.MAX_SAFE_INTEGER;

export const Int = (options: { minimum?: number; maximum?: number } = {}) =>
  Type.Integer({ minimum: options.minimum ?? 0, maximum: options.maximum ?? MAX_INT });

export const Str = (minLength: number, maxLength: number, pattern?: string) =>
  Type.String(pattern === undefined ? { minLength, maxLength } : { minLength, maxLength, pattern });

/** Arbitrary JSON object attached to keys and identities (reference: at most 100 properties; limits.ts: its size). */
export const Meta = () =>
  Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100, maxJsonBytes: MAX_META_BYTES });

/** A string enum as one `enum` keyword (a union of literals would report one error per member). */
export const Enum = <const T extends readonly string[]>(values: T) =>
  Type.Unsafe<T[number]>({ type: "string", enum: [...values] });

export const Closed = <P extends Parameters<typeof Type.Object>[0]>(properties: P) =>
  Type.Object(properties, { additionalProperties: false });

/**
 * A field that also accepts JSON null, as one `type: [t, "null"]` keyword (a
 * union would report one error per member). Only for three-state updates,
 * where null means "clear it".
 */
export const Nullable = <S extends TSchema>(schema: S) =>
  Type.Unsafe<Static<S> | null>({ ...schema, type: [schema["type"] as string, "null"] });

export const ID_PATTERN = "^[a-zA-Z0-9_]+$";
export const SLUG_PATTERN = "^[a-zA-Z0-9_:\\-\\.\\*]+$";
export const EXTERNAL_ID_PATTERN = "^[a-zA-Z0-9_.-]+$";

/**
 * Whether a body valid for `schema` may hold JSON of any shape, and so of any depth: a record
 * (meta), an object open to fields it does not name, or a value of any type. A closed schema
 * bounds the depth itself: a deeper body fails validation at the first place that does not fit.
 */
export function holdsFreeJson(schema: TSchema): boolean {
  const pending: unknown[] = [schema];
  for (let s = pending.pop(); s !== undefined; s = pending.pop()) {
    const node = s as Record<string, unknown>;
    const type = node["type"];
    if (type === undefined && node["enum"] === undefined && node["const"] === undefined) return true;
    const types = Array.isArray(type) ? type : [type];
    if (types.includes("object")) {
      if (node["patternProperties"] !== undefined || node["additionalProperties"] !== false) return true;
      pending.push(...Object.values((node["properties"] ?? {}) as Record<string, unknown>));
    }
    if (types.includes("array")) pending.push(node["items"] ?? {});
  }
  return false;
}

export type Validate<T> = (body: unknown) => { ok: true; value: T } | { ok: false; violations: Violation[] };

/** At most this many violations are reported, so a huge bad array cannot make a huge answer. */
const MAX_VIOLATIONS = 50;

/**
 * Compiles a schema once. `refused` gives fields the operation refuses on
 * purpose a message of their own (verifyKey's apiId), instead of "unknown field".
 */
export function compile<S extends TSchema>(
  schema: S,
  refused: Record<string, Omit<Violation, "location">> = {},
): Validate<Static<S>> {
  const check = ajv.compile(schema);
  return (body) => {
    if (check(body)) return { ok: true, value: body as Static<S> };
    // One violation per field: the first problem found is the one to fix first.
    const seen = new Set<string>();
    const violations: Violation[] = [];
    for (const e of check.errors ?? []) {
      // An if/then failure also reports what "then" required, which is the one to name.
      if (e.keyword === "if") continue;
      const v = violationOf(e, refused);
      if (seen.has(v.location)) continue;
      seen.add(v.location);
      violations.push(v);
      if (violations.length === MAX_VIOLATIONS) break;
    }
    return { ok: false, violations };
  };
}

/** "/body/credits/remaining" reads as "credits.remaining"; array items as "ratelimits[0].name". */
function fieldName(location: string): string {
  const parts = location.split("/").slice(2);
  if (parts.length === 0) return "the body";
  let out = "";
  for (const raw of parts) {
    const p = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    out += /^\d+$/.test(p) ? `[${p}]` : out === "" ? p : `.${p}`;
  }
  return out;
}

function violationOf(e: ErrorObject, refused: Record<string, Omit<Violation, "location">>): Violation {
  const at = `/body${e.instancePath}`;
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "required": {
      const location = `${at}/${String(p["missingProperty"])}`;
      return { location, message: `${fieldName(location)} is required.` };
    }
    case "additionalProperties": {
      const name = String(p["additionalProperty"]);
      const location = `${at}/${name}`;
      // Own keys only: a field named __proto__ or constructor would otherwise find Object's.
      const special = e.instancePath === "" && Object.hasOwn(refused, name) ? refused[name] : undefined;
      if (special) return { location, ...special };
      return {
        location,
        message: `${fieldName(location)} is not a field of this operation.`,
        fix: `Remove '${name}' or check its spelling.`,
      };
    }
    case "maxJsonBytes":
      return {
        location: at,
        message: `${fieldName(at)} ${describe(e, p)}.`,
        fix: "Keep meta small (under 10 KB is best: it is returned by every verification); store large data elsewhere and keep a reference in meta.",
      };
    default:
      return { location: at, message: `${fieldName(at)} ${describe(e, p)}.` };
  }
}

function describe(e: ErrorObject, p: Record<string, unknown>): string {
  switch (e.keyword) {
    case "type": {
      // Nullable: "must be an object or null".
      if (Array.isArray(p["type"])) return `must be ${(p["type"] as string[]).map(aType).join(" or ")}`;
      const t = String(p["type"]);
      return `must be ${t === "object" || t === "array" || t === "integer" ? "an" : "a"} ${t}`;
    }
    case "minLength":
      return `must be at least ${p["limit"]} character${p["limit"] === 1 ? "" : "s"} long`;
    case "maxLength":
      return `must be at most ${p["limit"]} characters long`;
    case "minimum":
      return `must be at least ${p["limit"]}`;
    case "maximum":
      return `must be at most ${p["limit"]}`;
    case "minItems":
      return `must hold at least ${p["limit"]} item${p["limit"] === 1 ? "" : "s"}`;
    case "maxItems":
      return `must hold at most ${p["limit"]} items`;
    case "maxProperties":
      return `must have at most ${p["limit"]} properties`;
    case "maxJsonBytes":
      return `is ${p["bytes"]} bytes of JSON; at most ${p["limit"]} are stored`;
    case "pattern":
      return `must match the pattern ${String(p["pattern"])}`;
    case "enum":
      return `must be one of ${(p["allowedValues"] as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "const":
      return `must be ${JSON.stringify(p["allowedValue"])}`;
    default:
      return e.message ?? "is invalid";
  }
}

const aType = (t: string) =>
  t === "null" ? t : `${t === "object" || t === "array" || t === "integer" ? "an" : "a"} ${t}`;

/** Unkey's RatelimitRequest; autoApply may be omitted (then the limit is manual). */
export const RatelimitRequest = () =>
  Closed({
    name: Str(3, 128),
    limit: Int({ minimum: 1 }),
    duration: Int({ minimum: 1000 }),
    autoApply: Type.Optional(Type.Boolean()),
  });

/** Unkey's paging fields: limit 1 to 100 (default 100), cursor at most 1024, search at most 256. */
export const pageFields = {
  limit: Type.Optional(Int({ minimum: 1, maximum: 100 })),
  cursor: Type.Optional(Str(0, 1024)),
  search: Type.Optional(Str(0, 256)),
};
