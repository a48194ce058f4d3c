import { describe, expect, it } from "vitest";
import { answeringEverything, DOCS, harness } from "../testing/in-memory-gateway.ts";
import { OPERATIONS, routes } from "./routes/index.ts";

type Path = (string | number)[];

/** The places of a JSON value holding a string, and those holding an object (the body first). */
function placesOf(value: unknown, at: Path = [], out = { strings: [] as Path[], objects: [] as Path[] }) {
  if (typeof value === "string") out.strings.push(at);
  else if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) placesOf(v, [...at, i], out);
  } else if (value !== null && typeof value === "object") {
    out.objects.push(at);
    for (const [k, v] of Object.entries(value)) placesOf(v, [...at, k], out);
  }
  return out;
}

const pointer = (path: Path) =>
  ["/body", ...path.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1"))].join("/");

/** The example body as JSON text, with the text `raw` (a JSON string, escapes and all) at `path`. */
function withRawAt(example: unknown, path: Path, raw: string): string {
  const marked = structuredClone(example);
  if (path.length === 0) return raw;
  let parent = marked as Record<string | number, unknown>;
  for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, unknown>;
  parent[path.at(-1)!] = "\u0001MARK\u0001";
  return JSON.stringify(marked).replace('"\\u0001MARK\\u0001"', () => raw);
}

/** The example body with a key spelt `rawKey` (a JSON string) added to the object at `path`. */
function withRawKeyAt(example: unknown, path: Path, rawKey: string): string {
  const marked = structuredClone(example) as Record<string, unknown>;
  let target = marked as Record<string | number, unknown>;
  for (const step of path) target = target[step] as Record<string | number, unknown>;
  target["\u0001KEY\u0001"] = 1;
  return JSON.stringify(marked).replace('"\\u0001KEY\\u0001"', () => rawKey);
}

const SURROGATE = {
  message: "An unpaired UTF-16 surrogate (\\ud800 to \\udfff) cannot be stored.",
  fix: "Escape a character beyond U+FFFF as its pair of surrogates (\\ud83d\\ude00), or send it as UTF-8.",
};
const NUL = {
  message: "U+0000 (NUL) cannot be stored.",
  fix: "Remove the \\u0000 characters from the value or key.",
};

/**
 * Text PostgreSQL's text and jsonb cannot hold (U+0000, a surrogate without its pair) arrives only
 * as a JSON escape; the gateway refuses it at the JSON boundary, for every operation, with 400
 * naming the field, before authentication and before any service is called. The fakes fail as
 * PostgreSQL would (testing/in-memory-gateway.ts, storeLikePostgres), so what slipped past would answer 500.
 */
describe("strings no store can hold", () => {
  const h = harness(answeringEverything());

  it.each(OPERATIONS)(
    "%s: a lone surrogate or U+0000 in any string of its example, or in a key, answers 400 naming it",
    async (operation) => {
      const example = routes[operation].example;
      const { strings, objects } = placesOf(example);
      const cases: [string, string, typeof SURROGATE][] = [];
      for (const [i, path] of strings.entries()) {
        // Each kind at some place: high or low alone, a reversed pair, U+0000, upper-case hex.
        const raw = ['"fuzz\\ud800"', '"\\udc00x"', '"\\ude00\\ud83d"', '"a\\u0000b"', '"\\uDBFF"'][i % 5]!;
        cases.push([withRawAt(example, path, raw), pointer(path), raw.includes("0000") ? NUL : SURROGATE]);
      }
      const object = objects[0];
      if (object !== undefined) {
        cases.push([withRawKeyAt(example, object, '"k\\udfff"'), pointer([...object, "k\udfff"]), SURROGATE]);
        cases.push([withRawKeyAt(example, object, '"\\u0000"'), pointer([...object, "\u0000"]), NUL]);
      }
      expect(cases.length).toBeGreaterThan(0);
      for (const [raw, location, violation] of cases) {
        // Without a root key: the body is refused first.
        const res = await h.post(operation, undefined, { raw, authorization: null });
        expect({ raw, status: res.status }).toEqual({ raw, status: 400 });
        expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
        expect(res.body.error.errors).toEqual([{ location, ...violation }]);
        expect(res.body.error.detail).toContain(location);
      }
      expect(h.calls.authenticateRootKey).toBe(0);
    },
  );

  it("names keys.createKey's meta.plan for the body an attacker sent, and identities.createIdentity's", async () => {
    for (const [operation, raw] of [
      ["keys.createKey", '{"apiId":"api_123","meta":{"plan":"fuzz\\ud800"}}'],
      ["identities.createIdentity", '{"externalId":"user_42","meta":{"plan":"fuzz\\ud800"}}'],
    ] as const) {
      const res = await h.post(operation, undefined, { raw });
      expect(res.status).toBe(400);
      expect(res.body.error.errors).toEqual([{ location: "/body/meta/plan", ...SURROGATE }]);
    }
  });
});

describe("text beyond the BMP", () => {
  it("is stored as sent, literal or escaped as its surrogate pair, in values and keys", async () => {
    const seen: { keys?: unknown; identities?: unknown } = {};
    const h = harness({
      keys: {
        createKey(req) {
          seen.keys = { name: req.name, meta: JSON.parse(req.metaJson ?? "null") };
          return { keyId: "key_1", key: "sk_1" };
        },
      },
      identity: {
        createIdentity(req) {
          seen.identities = { externalId: req.externalId, meta: JSON.parse(req.metaJson ?? "null") };
          return { identityId: "id_1" };
        },
      },
    });
    const key = await h.post("keys.createKey", undefined, {
      raw: '{"apiId":"api_123","name":"😀 \\ud83d\\ude00","meta":{"plan":"\\uD834\\uDD1E𝔘","\\ud83d\\ude00":"é\\u00e9"}}',
    });
    expect(key.status).toBe(200);
    expect(seen.keys).toEqual({ name: "😀 😀", meta: { plan: "𝄞𝔘", "😀": "éé" } });
    const identity = await h.post("identities.createIdentity", undefined, {
      raw: '{"externalId":"user_42","meta":{"plan":"\\ud83d\\ude00 pro","list":["𝔘","\\\\ud800 is text"]}}',
    });
    expect(identity.status).toBe(200);
    expect(seen.identities).toEqual({
      externalId: "user_42",
      meta: { plan: "😀 pro", list: ["𝔘", "\\ud800 is text"] },
    });
  });
});
