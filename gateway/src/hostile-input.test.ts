import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing/in-memory-gateway.ts";
import { MAX_DEPTH, MAX_META_BYTES } from "./limits.ts";

/** `levels` objects nested as {"a":{"a":…{}}}, as raw JSON text (JSON.stringify would overflow first). */
const nestedObjects = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;
/** `levels` arrays nested as [[…[]]]. */
const nestedArrays = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

/** The JSON pointer of the object or array at `level` below `at`, keys all "a". */
const pointer = (at: string, levels: number) => at + "/a".repeat(levels);

describe("bodies nested deeper than MAX_DEPTH", () => {
  const stored: string[] = [];
  const h = harness({
    keys: {
      createKey(req) {
        stored.push(req.metaJson ?? "");
        return { keyId: "key_1", key: "sk_1" };
      },
      updateKey(req) {
        stored.push(req.metaJson ?? "");
        return {};
      },
      migrateKeys(req) {
        stored.push(...req.keys.map((k) => k.metaJson ?? ""));
        return { migrated: [], failed: [] };
      },
    },
    identity: {
      createIdentity(req) {
        stored.push(req.metaJson ?? "");
        return { identityId: "id_1" };
      },
      updateIdentity(req) {
        stored.push(req.metaJson ?? "");
        return { identity: { id: "id_1", externalId: "user_42" } };
      },
    },
  });

  // The body is level 1 and meta level 2, so meta may hold MAX_DEPTH - 2 more levels.
  const deep = (levels: number) => ({
    "keys.createKey": `{"apiId":"api_123","meta":${nestedObjects(levels)}}`,
    "identities.createIdentity": `{"externalId":"user_42","meta":${nestedObjects(levels)}}`,
    "identities.updateIdentity": `{"identity":"user_42","meta":${nestedObjects(levels)}}`,
    "keys.updateKey": `{"keyId":"key_123","meta":${nestedObjects(levels)}}`,
    "keys.migrateKeys": `{"migrationId":"m_1","apiId":"api_123","keys":[{"hash":"abc","meta":${nestedObjects(levels)}}]}`,
  });
  const metaAt = {
    "keys.createKey": "/body/meta",
    "identities.createIdentity": "/body/meta",
    "identities.updateIdentity": "/body/meta",
    "keys.updateKey": "/body/meta",
    "keys.migrateKeys": "/body/keys/0/meta",
  };

  it.each(Object.keys(metaAt))(
    "%s answers 400 naming where a meta nested 10,000 levels deep goes too deep, and stores nothing",
    async (operation) => {
      stored.length = 0;
      const raw = deep(10_000)[operation as keyof typeof metaAt];
      const res = await h.post(operation, undefined, { raw });
      expect(res.status).toBe(400);
      expect(res.body.meta.requestId).toMatch(/^req_/);
      const at = metaAt[operation as keyof typeof metaAt];
      // meta's own level is its depth in the body; the first object past MAX_DEPTH is named.
      const levelsOfMeta = at.split("/").length - 1;
      const tooDeep = pointer(at, MAX_DEPTH + 1 - levelsOfMeta);
      expect(res.body.error).toEqual({
        title: "Bad Request",
        detail: `The request body is nested deeper than ${MAX_DEPTH} levels at ${tooDeep}.`,
        status: 400,
        type: `${DOCS}unkey/application/invalid_input`,
        errors: [
          {
            location: tooDeep,
            message: `Objects and arrays may be nested at most ${MAX_DEPTH} levels deep, the body counting as one.`,
            fix: "Flatten the value, for example by joining nested keys into one.",
          },
        ],
      });
      expect(stored).toEqual([]);
    },
  );

  it("accepts a meta nested exactly to the limit, and stores it", async () => {
    stored.length = 0;
    const raw = deep(MAX_DEPTH - 1)["keys.createKey"];
    const res = await h.post("keys.createKey", undefined, { raw });
    expect(res.status).toBe(200);
    expect(stored).toEqual([JSON.stringify(JSON.parse(raw).meta)]);
    const over = await h.post("keys.createKey", undefined, { raw: deep(MAX_DEPTH)["keys.createKey"] });
    expect(over.status).toBe(400);
    expect(over.body.error.errors[0].location).toBe(pointer("/body/meta", MAX_DEPTH - 1));
  });

  it("counts arrays as levels too, and names their indexes", async () => {
    const res = await h.post("keys.createKey", undefined, {
      raw: `{"apiId":"api_123","meta":{"list":[1,2,${nestedArrays(100)}]}}`,
    });
    expect(res.status).toBe(400);
    // body, meta, list, then the array at index 2 and the arrays in it, each at index 0.
    expect(res.body.error.errors[0].location).toBe(`/body/meta/list/2${"/0".repeat(MAX_DEPTH - 3)}`);
  });

  it("answers 400 for a bare array nested 100,000 levels deep, before authentication", async () => {
    const res = await h.post("identities.createIdentity", undefined, {
      raw: nestedArrays(100_000),
      authorization: null,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0].location).toBe(`/body${"/0".repeat(MAX_DEPTH)}`);
  });

  it("lets a closed schema refuse a deep body where it stops fitting (keys.verifyKey, ratelimits.multiLimit)", async () => {
    const verify = await h.post("keys.verifyKey", undefined, {
      raw: `{"key":"sk_1","tags":[${nestedArrays(100_000)}]}`,
      authorization: null,
    });
    expect(verify.status).toBe(400);
    expect(verify.body.error.errors).toEqual([
      { location: "/body/tags/0", message: "tags[0] must be a string." },
    ]);
    const multi = await h.post("ratelimits.multiLimit", undefined, {
      raw: nestedArrays(100_000),
      authorization: null,
    });
    expect(multi.status).toBe(400);
    expect(multi.body.error.errors).toEqual([{ location: "/body/0", message: "[0] must be an object." }]);
  });

  it("does not count brackets inside strings, escaped quotes included", async () => {
    stored.length = 0;
    const text = `\\"${"[{".repeat(200)}`;
    const res = await h.post("keys.createKey", undefined, {
      raw: `{"apiId":"api_123","meta":{"note":"${text}","${"[".repeat(50)}":1}}`,
    });
    expect(res.status).toBe(200);
    expect(stored).toHaveLength(1);
  });

  it("names a key holding ~ or / as a JSON pointer does", async () => {
    const res = await h.post("keys.createKey", undefined, {
      raw: `{"apiId":"api_123","meta":{"a/b~c":${nestedObjects(100)}}}`,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0].location).toBe(`/body/meta/a~1b~0c${"/a".repeat(MAX_DEPTH - 2)}`);
  });
});

describe("meta larger than MAX_META_BYTES", () => {
  const stored: string[] = [];
  const h = harness({
    keys: {
      createKey(req) {
        stored.push(req.metaJson ?? "");
        return { keyId: "key_1", key: "sk_1" };
      },
      updateKey(req) {
        stored.push(req.metaJson ?? "");
        return {};
      },
      migrateKeys(req) {
        stored.push(...req.keys.map((k) => k.metaJson ?? ""));
        return { migrated: [], failed: [] };
      },
    },
    identity: {
      createIdentity(req) {
        stored.push(req.metaJson ?? "");
        return { identityId: "id_1" };
      },
      updateIdentity(req) {
        stored.push(req.metaJson ?? "");
        return { identity: { id: "id_1", externalId: "user_42" } };
      },
    },
  });
  /** A meta whose JSON is exactly `bytes` long: {"v":"xxx…"} is 8 bytes around the text. */
  const metaOf = (bytes: number) => ({ v: "x".repeat(bytes - 8) });
  const bodies = (meta: unknown) =>
    [
      ["keys.createKey", { apiId: "api_123", meta }, "/body/meta", "meta"],
      ["keys.updateKey", { keyId: "key_123", meta }, "/body/meta", "meta"],
      ["identities.createIdentity", { externalId: "user_42", meta }, "/body/meta", "meta"],
      ["identities.updateIdentity", { identity: "user_42", meta }, "/body/meta", "meta"],
      [
        "keys.migrateKeys",
        { migrationId: "m_1", apiId: "api_123", keys: [{ hash: "abc" }, { hash: "def", meta }] },
        "/body/keys/1/meta",
        "keys[1].meta",
      ],
    ] as const;

  it.each(bodies(metaOf(MAX_META_BYTES + 1)))(
    "%s answers 400 naming the meta, and stores nothing",
    async (operation, body, location, name) => {
      stored.length = 0;
      const res = await h.post(operation, body);
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
      expect(res.body.error.errors).toEqual([
        {
          location,
          message: `${name} is ${MAX_META_BYTES + 1} bytes of JSON; at most ${MAX_META_BYTES} are stored.`,
          fix: "Keep meta small (under 10 KB is best: it is returned by every verification); store large data elsewhere and keep a reference in meta.",
        },
      ]);
      expect(stored).toEqual([]);
    },
  );

  it.each(bodies(metaOf(MAX_META_BYTES)))(
    "%s stores a meta of exactly the limit",
    async (operation, body) => {
      stored.length = 0;
      const res = await h.post(operation, body);
      expect(res.status).toBe(200);
      expect(stored.filter((m) => m !== "")).toEqual([JSON.stringify(metaOf(MAX_META_BYTES))]);
    },
  );

  it("counts bytes, not characters", async () => {
    stored.length = 0;
    // "é" is two bytes of UTF-8: half as many characters reach the same size.
    const res = await h.post("keys.createKey", {
      apiId: "api_123",
      meta: { v: "é".repeat(Math.ceil((MAX_META_BYTES - 7) / 2)) },
    });
    expect(res.status).toBe(400);
    expect(stored).toEqual([]);
  });
});

describe("fields named after Object's own properties", () => {
  const h = harness();

  it.each(["__proto__", "constructor", "toString", "hasOwnProperty", "__defineGetter__"])(
    "answers an unknown top-level field %s like any other, naming it",
    async (name) => {
      const res = await h.post("apis.createApi", undefined, {
        raw: `{"name":"payments",${JSON.stringify(name)}:{"polluted":true}}`,
      });
      expect(res.status).toBe(400);
      expect(res.body.error.errors).toEqual([
        {
          location: `/body/${name}`,
          message: `${name} is not a field of this operation.`,
          fix: `Remove '${name}' or check its spelling.`,
        },
      ]);
      expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
    },
  );
});
