import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { afterEach, describe, expect, it } from "vitest";
import { callersText, INTERNAL_AUTH_HEADER, InternalAuth, MIN_SECRET_LENGTH } from "./internal-auth.ts";
import { registry } from "./metrics.ts";

const SECRET = "s3cret-s3cret-s3cret-s3cret-s3cret-44chars=";
const OTHER = "another-secret-another-secret-another-secret";
const GET_KEY = "/keys.v1.KeysService/GetKey";
const GET_API = "/keys.v1.KeysService/GetApi";
const alice = { workspaceId: "ws_alice", rootKeyId: "rk_1", permissions: ["api.*.read_key"] };
const mallory = { workspaceId: "ws_victim", rootKeyId: "rk_1", permissions: ["api.*.read_key"] };

let now = Date.UTC(2026, 0, 1);
const clock = () => now;
afterEach(() => {
  now = Date.UTC(2026, 0, 1);
});

function refusal(run: () => void): ConnectError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    return err as ConnectError;
  }
  throw new Error("the call was accepted");
}

describe("InternalAuth", () => {
  const auth = new InternalAuth([SECRET], clock);

  it("accepts what it signed: the same method, the same callers, within a minute", () => {
    const header = auth.sign(GET_KEY, { caller: alice, keyId: "key_1" });
    expect(header).toMatch(/^v1\.[0-9]{10}\.[A-Za-z0-9_-]{43}$/);
    now += 59_000;
    // The rest of the body is not covered: a service validates it, and trusts only the callers.
    expect(() => auth.check(GET_KEY, header, { caller: alice, keyId: "key_2", decrypt: true })).not.toThrow();
  });

  it("refuses a call with no header, an empty one or a malformed one", () => {
    const good = auth.sign(GET_KEY, { caller: alice });
    for (const header of [
      undefined,
      "",
      "v1",
      "v2" + good.slice(2),
      good.slice(0, -1),
      `${good}A`,
      good.replace(/\.[0-9]+\./, ".12e3."),
      good.replace(/\.[0-9]+\./, ".-1."),
    ]) {
      const err = refusal(() => auth.check(GET_KEY, header, { caller: alice }));
      expect(err.message).toContain(INTERNAL_AUTH_HEADER);
    }
  });

  it("refuses a signature replayed on another method", () => {
    const header = auth.sign(GET_API, { caller: alice });
    expect(refusal(() => auth.check(GET_KEY, header, { caller: alice })).message).toContain("wrong");
  });

  it("refuses a signature of one caller sent with another, or with one caller more or less", () => {
    const header = auth.sign(GET_KEY, { caller: alice });
    refusal(() => auth.check(GET_KEY, header, { caller: mallory }));
    refusal(() => auth.check(GET_KEY, header, { caller: { ...alice, permissions: ["*"] } }));
    refusal(() => auth.check(GET_KEY, header, { caller: { ...alice, rootKeyId: "rk_2" } }));
    refusal(() => auth.check(GET_KEY, header, {}));
    const batch = auth.sign("/keys.v1.KeysService/VerifyKeyBatch", { callers: [alice] });
    refusal(() => auth.check("/keys.v1.KeysService/VerifyKeyBatch", batch, { callers: [alice, mallory] }));
    refusal(() => auth.check("/keys.v1.KeysService/VerifyKeyBatch", batch, { callers: [] }));
  });

  it("refuses an expired signature, and one dated further ahead than a clock could be off", () => {
    const header = auth.sign(GET_KEY, { caller: alice });
    now += 60_000 + 30_000 + 1_000;
    expect(refusal(() => auth.check(GET_KEY, header, { caller: alice })).message).toContain("expired");
    now = Date.UTC(2026, 0, 1) - 31_000;
    refusal(() => auth.check(GET_KEY, header, { caller: alice }));
  });

  it("tolerates clocks up to 30 s apart either way", () => {
    const header = auth.sign(GET_KEY, { caller: alice });
    now += 60_000 + 29_000;
    expect(() => auth.check(GET_KEY, header, { caller: alice })).not.toThrow();
    now = Date.UTC(2026, 0, 1) - 29_000;
    expect(() => auth.check(GET_KEY, header, { caller: alice })).not.toThrow();
  });

  it("refuses a signature made with another secret", () => {
    const header = new InternalAuth([OTHER], clock).sign(GET_KEY, { caller: alice });
    refusal(() => auth.check(GET_KEY, header, { caller: alice }));
  });

  it("signs with the first secret of a list and accepts every one, so a secret can be rotated", () => {
    const rotating = new InternalAuth([OTHER, SECRET], clock);
    const old = auth.sign(GET_KEY, { caller: alice });
    expect(() => rotating.check(GET_KEY, old, { caller: alice })).not.toThrow();
    const fresh = rotating.sign(GET_KEY, { caller: alice });
    expect(() => new InternalAuth([OTHER], clock).check(GET_KEY, fresh, { caller: alice })).not.toThrow();
    refusal(() => auth.check(GET_KEY, fresh, { caller: alice }));
  });

  it("signs a message's init shape and the message decoded from it alike (unset fields are empty)", () => {
    const header = auth.sign(GET_KEY, { caller: { workspaceId: "ws_1" } });
    expect(() =>
      auth.check(GET_KEY, header, { caller: create(CallerSchema, { workspaceId: "ws_1" }) }),
    ).not.toThrow();
    const none = auth.sign("/keys.v1.KeysService/AuthenticateRootKey", { hash: "x" });
    expect(() => auth.check("/keys.v1.KeysService/AuthenticateRootKey", none, {})).not.toThrow();
    refusal(() => auth.check("/keys.v1.KeysService/AuthenticateRootKey", none, { caller: alice }));
  });

  it("sends the same assertion again for the same method and callers for 15 s, then a fresh one", () => {
    const signer = new InternalAuth([SECRET], clock);
    const first = signer.sign(GET_KEY, { caller: alice });
    now += 14_000;
    expect(signer.sign(GET_KEY, { caller: { ...alice } })).toBe(first);
    expect(signer.sign(GET_API, { caller: alice })).not.toBe(first);
    expect(signer.sign(GET_KEY, { caller: mallory })).not.toBe(first);
    now += 1_000;
    const renewed = signer.sign(GET_KEY, { caller: alice });
    expect(renewed).not.toBe(first);
    expect(Number(renewed.split(".")[1]) - Number(first.split(".")[1])).toBe(15);
    // A reused assertion has most of its minute left: the receiver still accepts it 45 s on.
    now += 14_000;
    expect(signer.sign(GET_KEY, { caller: alice })).toBe(renewed);
    now += 45_000;
    expect(() => auth.check(GET_KEY, renewed, { caller: alice })).not.toThrow();
  });

  it("counts refusals by reason at /metrics", async () => {
    refusal(() => auth.check(GET_KEY, undefined, {}));
    const text = await registry.metrics();
    expect(text).toMatch(/latchkey_rpc_refused_total\{reason="missing"\} [1-9]/);
  });
});

describe("LATCHKEY_INTERNAL_SECRET", () => {
  const saved = process.env["LATCHKEY_INTERNAL_SECRET"];
  afterEach(() => {
    if (saved === undefined) delete process.env["LATCHKEY_INTERNAL_SECRET"];
    else process.env["LATCHKEY_INTERNAL_SECRET"] = saved;
  });

  it("is required, with a message that says what it is", () => {
    delete process.env["LATCHKEY_INTERNAL_SECRET"];
    expect(() => InternalAuth.fromEnv()).toThrow(/^LATCHKEY_INTERNAL_SECRET is required: the secret shared/);
  });

  it(`must be at least ${MIN_SECRET_LENGTH} characters, each secret of a list, and is never repeated in the message`, () => {
    process.env["LATCHKEY_INTERNAL_SECRET"] = "short-secret";
    expect(() => InternalAuth.fromEnv()).toThrow(/secret 1 has 12 characters, fewer than 32/);
    process.env["LATCHKEY_INTERNAL_SECRET"] = `${SECRET}, short-secret`;
    let message = "";
    try {
      InternalAuth.fromEnv();
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/secret 2 has 12 characters/);
    expect(message).not.toContain("short-secret");
    expect(message).not.toContain(SECRET);
  });

  it("is read as a comma-separated list, spaces around each ignored", () => {
    process.env["LATCHKEY_INTERNAL_SECRET"] = ` ${OTHER} , ${SECRET} `;
    const auth = InternalAuth.fromEnv();
    const header = new InternalAuth([SECRET]).sign(GET_KEY, {});
    expect(() => auth.check(GET_KEY, header, {})).not.toThrow();
    expect(JSON.stringify({ auth })).not.toContain(SECRET);
  });
});

describe("callersText", () => {
  it("covers every field of common.v1.Caller (a field added there must be signed too)", () => {
    expect(CallerSchema.fields.map((f) => f.localName)).toEqual([
      "workspaceId",
      "rootKeyId",
      "permissions",
      "requestId",
    ]);
  });

  it("signs a caller's requestId, and a caller without one as before", () => {
    const base = { workspaceId: "ws_a", rootKeyId: "rk_1", permissions: ["*"] };
    expect(callersText({ caller: base })).toBe('[["ws_a","rk_1",["*"]]]');
    expect(callersText({ caller: { ...base, requestId: "" } })).toBe('[["ws_a","rk_1",["*"]]]');
    expect(callersText({ caller: { ...base, requestId: "req_1" } })).toBe('[["ws_a","rk_1",["*"],"req_1"]]');
    const header = new InternalAuth([SECRET]).sign(GET_KEY, { caller: { ...base, requestId: "req_1" } });
    expect(() =>
      new InternalAuth([SECRET]).check(GET_KEY, header, { caller: { ...base, requestId: "req_2" } }),
    ).toThrow(/wrong/);
  });

  it("keeps at most 1,000 assertions for reuse, the least recently used dropped first", () => {
    let now = 1_000_000;
    const signer = new InternalAuth([SECRET], () => now);
    const other = (i: number | string) => ({ caller: { ...alice, workspaceId: `ws_other_${i}` } });
    const hot = signer.sign(GET_KEY, { caller: alice });
    const firstOther = signer.sign(GET_KEY, other(0));
    // Anything made anew from here on has a later expiry, so it differs from what was kept.
    now += 1_000;
    for (let i = 1; i < 999; i++) signer.sign(GET_KEY, other(i));
    // A thousand kept; the hot caller's is used again, then one more caller needs room.
    expect(signer.sign(GET_KEY, { caller: alice })).toBe(hot);
    signer.sign(GET_KEY, other("new"));
    expect(signer.sign(GET_KEY, { caller: alice })).toBe(hot);
    expect(signer.sign(GET_KEY, other(0))).not.toBe(firstOther);
  });

  it("keeps no assertion for reuse when the caller carries a request id", () => {
    let now = 1_000_000;
    const auth = new InternalAuth([SECRET], () => now);
    const caller = { workspaceId: "ws_a", rootKeyId: "rk_1", permissions: ["*"], requestId: "req_1" };
    const first = auth.sign(GET_KEY, { caller });
    now += 1_000;
    // Made anew (a later expiry), where a caller without one would get the first assertion again.
    expect(auth.sign(GET_KEY, { caller })).not.toBe(first);
    const plain = { ...caller, requestId: "" };
    const reused = auth.sign(GET_KEY, { caller: plain });
    now += 1_000;
    expect(auth.sign(GET_KEY, { caller: plain })).toBe(reused);
  });

  it("tells apart callers whose fields would run together", () => {
    const a = callersText({ caller: { workspaceId: "ws_a", rootKeyId: "b", permissions: [] } });
    const b = callersText({ caller: { workspaceId: "ws_", rootKeyId: "ab", permissions: [] } });
    const c = callersText({ caller: { workspaceId: "ws_a", permissions: ["b,c"] } });
    const d = callersText({ caller: { workspaceId: "ws_a", permissions: ["b", "c"] } });
    expect(new Set([a, b, c, d]).size).toBe(4);
    expect(callersText({ callers: [alice, mallory] })).not.toBe(callersText({ callers: [mallory, alice] }));
  });
});
