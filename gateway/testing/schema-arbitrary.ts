import fc from "fast-check";

/**
 * Request bodies drawn from a route's JSON Schema, for the fuzz test: valid ones, and hostile
 * mutations of valid ones. Covers the keywords the route schemas use (schema.ts): type (one, or
 * [t, "null"]), properties, required, additionalProperties, patternProperties, if/else,
 * items, minItems, maxItems, uniqueItems, minLength, maxLength, pattern, enum, minimum, maximum.
 */
// biome-ignore lint/suspicious/noExplicitAny: a JSON Schema is read keyword by keyword
type Schema = Record<string, any>;

/** One body as sent: its bytes, and what was done to it (for the failure report). */
export interface FuzzBody {
  label: string;
  raw: string | Buffer;
  /**
   * Where the gateway must refuse the body with 400, for a unicode mutation that put text no store
   * can hold (U+0000, a lone surrogate) or bytes that are not JSON (`/body`); undefined otherwise.
   */
  refusedAt?: string;
}

/** U+0000, or a surrogate without its pair: what PostgreSQL's text and jsonb refuse. */
const UNSTORABLE = /[\0\ud800-\udfff]/u;

/** The JSON pointer of a path into the body, as the gateway names a place. */
const pointer = (path: Path) =>
  ["/body", ...path.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1"))].join("/");

/** Strings a JSON value may hold that every store can keep: no U+0000 (the gateway refuses it, a documented 400). */
const text = (constraints: fc.StringConstraints = {}) =>
  fc.string({ unit: "grapheme", ...constraints }).filter((s) => !s.includes("\0"));

/** Any JSON value, a few levels deep, without U+0000. */
const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", maxDepth: 3 },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    text({ maxLength: 20 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(text({ maxLength: 10 }), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** A whole number in [min, max], edges included, over the whole safe range. */
function integerIn(min: number, max: number): fc.Arbitrary<number> {
  const span = max - min + 1;
  return fc.oneof(
    fc.constantFrom(min, max),
    fc.integer({ min: 0, max: Math.min(span - 1, 1_000) }).map((n) => min + n),
    fc.maxSafeNat().map((n) => min + (n % span)),
  );
}

function stringFor(s: Schema): fc.Arbitrary<string> {
  const min: number = s["minLength"] ?? 0;
  const max: number = s["maxLength"] ?? 1_000;
  if (s["pattern"] !== undefined) {
    return fc
      .stringMatching(new RegExp(s["pattern"]))
      .filter((v) => v.length >= min && v.length <= max && !v.includes("\0"));
  }
  // Mostly short, sometimes exactly as long as allowed.
  return fc.oneof(
    { weight: 4, arbitrary: text({ minLength: min, maxLength: Math.min(max, 40) }) },
    { weight: 1, arbitrary: fc.constant("x".repeat(max)) },
  );
}

function objectFor(s: Schema): fc.Arbitrary<Record<string, unknown>> {
  if (s["patternProperties"] !== undefined) {
    return fc.dictionary(text({ minLength: 1, maxLength: 12 }), anyJson, {
      maxKeys: Math.min(s["maxProperties"] ?? 10, 6),
    });
  }
  const properties: Record<string, Schema> = s["properties"] ?? {};
  const required: string[] = s["required"] ?? [];
  const record = (mustHave: string[], mustLack: string[]) => {
    const arbitraries: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, property] of Object.entries(properties)) {
      if (!mustLack.includes(name)) arbitraries[name] = validArbitrary(property);
    }
    return fc.record(arbitraries, { requiredKeys: [...new Set([...required, ...mustHave])] });
  };
  // if/else (analytics.getVerifications): either the `if` branch's fields, or none of them and `else`'s.
  if (s["if"] !== undefined && s["else"] !== undefined) {
    const ifRequired: string[] = s["if"]["required"] ?? [];
    return fc.oneof(record(ifRequired, []), record(s["else"]["required"] ?? [], ifRequired));
  }
  return record([], []);
}

/** Bodies `schema` accepts, without U+0000 (documented as refused) and within every size limit. */
export function validArbitrary(s: Schema): fc.Arbitrary<unknown> {
  if (Array.isArray(s["enum"])) return fc.constantFrom(...(s["enum"] as unknown[]));
  const type = s["type"];
  if (Array.isArray(type)) {
    return fc.oneof(
      ...type.map((t: string) => (t === "null" ? fc.constant(null) : validArbitrary({ ...s, type: t }))),
    );
  }
  switch (type) {
    case "string":
      return stringFor(s);
    case "integer":
      return integerIn(s["minimum"] ?? Number.MIN_SAFE_INTEGER, s["maximum"] ?? Number.MAX_SAFE_INTEGER);
    case "boolean":
      return fc.boolean();
    case "array": {
      const bounds = { minLength: s["minItems"] ?? 0, maxLength: Math.min(s["maxItems"] ?? 5, 5) };
      return s["uniqueItems"]
        ? fc.uniqueArray(validArbitrary(s["items"] ?? {}), { ...bounds, selector: (v) => JSON.stringify(v) })
        : fc.array(validArbitrary(s["items"] ?? {}), bounds);
    }
    case "object":
      return objectFor(s);
    default:
      return anyJson;
  }
}

// ---- Mutations ----

type Path = (string | number)[];

/** Every place in a JSON value, the value itself first. */
function pathsOf(value: unknown, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) pathsOf(value[i], [...at, i], out);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) pathsOf(v, [...at, k], out);
  }
  return out;
}

/** `value` with the thing at `path` replaced by what `change` makes of it (a copy; the original is kept). */
function changedAt(value: unknown, path: Path, change: (old: unknown) => unknown): unknown {
  if (path.length === 0) return change(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    copy[head as number] = changedAt(copy[head as number], rest, change);
    return copy;
  }
  const copy = { ...(value as Record<string, unknown>) };
  copy[head as string] = changedAt(copy[head as string], rest, change);
  return copy;
}

/** An object with an own, enumerable key such as `__proto__` (a literal would set the prototype). */
function withOwn(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...object };
  Object.defineProperty(copy, key, { value, enumerable: true, configurable: true, writable: true });
  return copy;
}

/** Text put in place of a placeholder string after JSON.stringify: numbers JSON can spell but JS cannot hold. */
const RAW_NUMBERS = [
  "1e309",
  "-1e309",
  "9007199254740993",
  "-9007199254740993",
  "1e-400",
  "-0",
  "1E+2",
  "0.0",
];

const WRONG_TYPES: unknown[] = [null, true, false, 0, -1, 1.5, "", "x", [], {}, [null], { a: 1 }, "[]", "{}"];
const EXTREME_NUMBERS: unknown[] = [
  1e308,
  -1e308,
  2 ** 53,
  -(2 ** 53),
  Number.MIN_VALUE,
  1e21,
  0.1 + 0.2,
  2 ** 31,
  -(2 ** 31) - 1,
  4102444800001,
];
const NUMBER_LIKE_STRINGS = [
  "NaN",
  "Infinity",
  "-Infinity",
  "1e309",
  "0x10",
  " 1",
  "1 ",
  "1_000",
  "true",
  "null",
];
const UNICODE = [
  "\ud800",
  "\udfff",
  "a\ud83d",
  "\udc00b",
  "\u0000",
  "nul\u0000in",
  "😀".repeat(200),
  "\u202e\u202d",
  "\uffff\ufffe",
  "\ufeff",
  "e\u0301\u0301\u0301",
  "Ω≈ç√∫",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
  "\u2028\u2029",
];
/**
 * Strings as JSON text, put in place of a value after JSON.stringify: escapes JSON.stringify never
 * writes (a reversed or doubled pair, upper-case hex), literal characters, and valid text beyond
 * the BMP escaped as its pair. Those holding U+0000 or a lone surrogate cannot be stored.
 */
const RAW_UNICODE = [
  '"fuzz\\ud800"',
  '"\\udfff"',
  '"a\\ud83d"',
  '"\\udc00b"',
  '"\\ude00\\ud83d"',
  '"\\uD800\\uD800"',
  '"\\uDBFF\\u0041"',
  '"\\u0000"',
  '"x\\u0000y"',
  '"\\ud83d\\ude00"',
  '"\\uD834\\uDD1E and \\ud83d\\ude00"',
  '"\\u00e9\\u4e2d"',
  '"\\\\ud800 is text"',
  // Literal: a lone surrogate in the text goes out as UTF-8's U+FFFD; a raw NUL byte is not JSON.
  '"lit\ud800"',
  '"a\u0000b"',
  '"😀𝔘𝔫"',
];
/** Object keys: lone surrogates and U+0000 (JSON.stringify escapes them), and characters beyond the BMP. */
const UNICODE_KEYS = ["\ud800", "k\udc00", "\u0000", "nul\u0000", "😀", "\ud83d\ude00x", "𝔘"];
const LONG_LENGTHS = [256, 1_001, 10_001, 100_000, 700_000];
const PROTO_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "__defineGetter__",
  "hasOwnProperty",
  "toString",
];

/**
 * Nesting 5,000 levels deep (objects, then arrays) at every place of `valid`, the body itself
 * included: where a schema is open (meta), only the depth limit stands between it and a
 * recursive JSON.stringify.
 */
export function nestedAtEveryPlace(valid: unknown): FuzzBody[] {
  return pathsOf(valid).flatMap((path) =>
    [
      ['{"a":', "}"],
      ["[", "]"],
    ].map(([open, close]) => {
      const raw = `${open!.repeat(5_000)}1${close!.repeat(5_000)}`;
      return {
        label: `nested 5,000 levels of ${open} at /${path.join("/")}`,
        raw: JSON.stringify(changedAt(valid, path, () => "\u0001RAW\u0001")).replace(
          '"\\u0001RAW\\u0001"',
          () => raw,
        ),
      };
    }),
  );
}

/** The number of places in a JSON value, for picking the sample with the most. */
export const placesIn = (value: unknown) => pathsOf(value).length;

/**
 * Unicode a store may refuse, at one place of a valid body: a string value (kind 5, escaped by
 * JSON.stringify), JSON text put in as it is (16), or a key of an object (17). `refusedAt` says
 * where the gateway must answer 400, when it must.
 */
function unicodeAt(valid: unknown, paths: Path[], pick: number, choice: number, kind: number): FuzzBody {
  const path = paths[pick % paths.length]!;
  if (kind === 5) {
    const value = UNICODE[choice % UNICODE.length]!;
    return {
      label: `unicode ${JSON.stringify(value).slice(0, 40)} at ${pointer(path)}`,
      raw: JSON.stringify(changedAt(valid, path, () => value)),
      refusedAt: UNSTORABLE.test(value) ? pointer(path) : undefined,
    };
  }
  if (kind === 16) {
    const text = RAW_UNICODE[choice % RAW_UNICODE.length]!;
    // What arrives is the text's UTF-8: a literal lone surrogate becomes U+FFFD on the way.
    let arrives: string | undefined;
    try {
      arrives = JSON.parse(Buffer.from(text).toString("utf8"));
    } catch {}
    return {
      label: `unicode as JSON text ${text} at ${pointer(path)}`,
      raw: JSON.stringify(changedAt(valid, path, () => "\u0001RAW\u0001")).replace(
        '"\\u0001RAW\\u0001"',
        () => text,
      ),
      refusedAt: arrives === undefined ? "/body" : UNSTORABLE.test(arrives) ? pointer(path) : undefined,
    };
  }
  // A key of the object at the place, or of the body when the place holds no object.
  const key = UNICODE_KEYS[choice % UNICODE_KEYS.length]!;
  const isObject = (v: unknown) => v !== null && typeof v === "object" && !Array.isArray(v);
  const objects = paths.filter((p) => isObject(p.reduce<unknown>((v, k) => (v as never)[k], valid)));
  const at = objects.length === 0 ? [] : objects[pick % objects.length]!;
  return {
    label: `unicode key ${JSON.stringify(key)} at ${pointer(at)}`,
    raw: JSON.stringify(
      changedAt(valid, at, (old) => (isObject(old) ? { ...(old as object), [key]: 1 } : { [key]: old })),
    ),
    refusedAt: UNSTORABLE.test(key) ? pointer([...at, key]) : undefined,
  };
}

/** Hostile unicode at one place of a valid body, each with where it must be refused (refusedAt). */
export function unicodeArbitrary(s: Schema): fc.Arbitrary<FuzzBody> {
  return fc
    .tuple(validArbitrary(s), fc.nat(), fc.nat(), fc.constantFrom(5, 16, 17))
    .map(([valid, pick, choice, kind]) => unicodeAt(valid, pathsOf(valid), pick, choice, kind));
}

/** Hostile variations of a valid body: one mutation each, at one of its places or on its raw text. */
export function mutatedArbitrary(s: Schema): fc.Arbitrary<FuzzBody> {
  return fc
    .tuple(validArbitrary(s), fc.nat(), fc.nat(), fc.nat({ max: 18 }))
    .map(([valid, pick, choice, kind]) => mutate(valid, pick, choice, kind));
}

function mutate(valid: unknown, pick: number, choice: number, kind: number): FuzzBody {
  const paths = pathsOf(valid);
  const path = paths[pick % paths.length]!;
  const where = `/${path.join("/")}`;
  const from = <T>(list: readonly T[]) => list[choice % list.length]!;
  const json = (label: string, value: unknown): FuzzBody => ({
    label: `${label} at ${where}`,
    raw: JSON.stringify(value),
  });
  const place = (label: string, replacement: unknown) =>
    json(
      label,
      changedAt(valid, path, () => replacement),
    );
  /** `raw` put at the place as text, after JSON.stringify: what JS values cannot spell. */
  const rawAt = (label: string, raw: string): FuzzBody => ({
    label: `${label} at ${where}`,
    raw: JSON.stringify(changedAt(valid, path, () => "\u0001RAW\u0001")).replace(
      '"\\u0001RAW\\u0001"',
      () => raw,
    ),
  });
  const text = JSON.stringify(valid);
  switch (kind) {
    case 0:
      return place(`wrong type ${JSON.stringify(from(WRONG_TYPES))}`, from(WRONG_TYPES));
    case 1:
      return place(`extreme number ${from(EXTREME_NUMBERS)}`, from(EXTREME_NUMBERS));
    case 2:
      return rawAt(`raw number ${from(RAW_NUMBERS)}`, from(RAW_NUMBERS));
    case 3:
      return place(`number-like string ${from(NUMBER_LIKE_STRINGS)}`, from(NUMBER_LIKE_STRINGS));
    case 4: {
      const n = from(LONG_LENGTHS);
      return place(`string of ${n}`, "a".repeat(n));
    }
    case 5:
    case 16:
    case 17:
      return unicodeAt(valid, paths, pick, choice, kind);
    case 6: {
      // Written as text: JSON.stringify itself would overflow the stack on the deepest.
      const levels = from([33, 100, 5_000]);
      const [open, close] = choice % 2 === 0 ? ["[", "]"] : ['{"a":', "}"];
      return rawAt(`nested ${levels} levels`, `${open.repeat(levels)}1${close.repeat(levels)}`);
    }
    case 7:
      return json(
        "unknown field",
        changedAt(valid, path, (old) =>
          old !== null && typeof old === "object" && !Array.isArray(old)
            ? { ...old, [from(["unknownField", "apiId", "extra", "é", ""])]: from(WRONG_TYPES) }
            : old,
        ),
      );
    case 8:
      return json(
        "missing field",
        changedAt(valid, path, (old) => {
          if (old === null || typeof old !== "object" || Array.isArray(old)) return old;
          const keys = Object.keys(old);
          if (keys.length === 0) return old;
          const { [keys[choice % keys.length]!]: _gone, ...rest } = old as Record<string, unknown>;
          return rest;
        }),
      );
    case 9:
      return json(
        "array for object, object for array",
        changedAt(valid, path, (old) =>
          Array.isArray(old) ? Object.fromEntries(old.map((v, i) => [String(i), v])) : [old],
        ),
      );
    case 10: {
      const key = from(PROTO_KEYS);
      return json(
        `own key ${key}`,
        changedAt(valid, path, (old) =>
          old !== null && typeof old === "object" && !Array.isArray(old)
            ? withOwn(old as Record<string, unknown>, key, { polluted: true, prototype: { polluted: true } })
            : withOwn({}, key, { polluted: true }),
        ),
      );
    }
    case 11: {
      // The same key twice: JSON.parse keeps the last, so put the hostile one first and last.
      if (!text.startsWith("{") || text === "{}")
        return { label: "duplicate key in no object", raw: `{"a":1,"a":2}` };
      const key = JSON.stringify(Object.keys(valid as object)[choice % Object.keys(valid as object).length]);
      const hostile = JSON.stringify(from(WRONG_TYPES));
      return choice % 2 === 0
        ? { label: `duplicate key ${key}, the second wrong`, raw: `${text.slice(0, -1)},${key}:${hostile}}` }
        : { label: `duplicate key ${key}, the first wrong`, raw: `{${key}:${hostile},${text.slice(1)}` };
    }
    case 12:
      return json(`the body as ${JSON.stringify(from(WRONG_TYPES))}`, from(WRONG_TYPES));
    case 13: {
      const cut = Math.max(0, text.length - 1 - (choice % Math.max(1, text.length)));
      return { label: `truncated to ${cut} characters`, raw: text.slice(0, cut) };
    }
    case 14: {
      const bytes = from([
        [0xff, 0xfe],
        [0xc3],
        [0xed, 0xa0, 0x80],
        [0xf4, 0x90, 0x80, 0x80],
        [0xef, 0xbb, 0xbf],
      ]);
      // Invalid UTF-8 inside the first string of the text, or before it all.
      const at = text.indexOf('"') + 1;
      return {
        label: `bytes ${bytes.map((b) => b.toString(16)).join(" ")} in the text`,
        raw: Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bytes), Buffer.from(text.slice(at))]),
      };
    }
    case 15:
      return from<FuzzBody>([
        { label: "a BOM before the body", raw: `\ufeff${text}` },
        { label: "form-encoded body", raw: "key=value&apiId=api_123" },
        { label: "two JSON documents", raw: `${text}${text}` },
        { label: "whitespace only", raw: " \n\t " },
        { label: "a body over 1 MiB", raw: `{"a":"${"a".repeat(1024 * 1024)}"}` },
        { label: "comments in JSON", raw: `/* hi */${text}` },
        { label: "single quotes", raw: text.replaceAll('"', "'") },
      ]);
    default:
      return place("null", null);
  }
}
