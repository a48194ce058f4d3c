import { createHash, generateKeyPairSync, sign } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DomainEvent } from "@latchkey/proto/common/v1/common_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { DOMAIN_EVENT_SUBJECT, ErrorReason } from "@latchkey/runtime";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";
import type { MemoryKeysStore } from "../store/memory-keys-store.ts";
import { ScanningKeys } from "./github-keys.ts";

const verifier = (ws: string) => callerOf(ws, "api.*.verify_key");

function kit() {
  const events = keepingEventSink();
  const k = memoryKeys({ events });
  const leaked = () =>
    events.kept
      .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
      .map((e) => e.message as DomainEvent)
      .filter((e) => e.type === "key.leaked")
      .map((e) => ({ id: e.id, workspaceId: e.workspaceId, data: JSON.parse(e.dataJson) }));
  const api = async (ws: string, fields: { keyFormat?: string; leakPolicy?: string } = {}) =>
    (await k.client.createApi({ caller: callerOf(ws, "*"), name: "leaky", ...fields })).apiId;
  const audit = () => (k.deps.store as MemoryKeysStore).audit.records;
  return { ...k, events, leaked, api, audit };
}

describe("checksummed keys", () => {
  it("are made for an API whose keyFormat is checksum, verify, and reroll in the same format", async () => {
    const { client, seed, api } = kit();
    const apiId = await api("ws_1", { keyFormat: "checksum" });
    const { key, keyId } = await seed.key({ apiId, prefix: "sk" });
    expect(key).toMatch(/^sk_lkc_[1-9A-HJ-NP-Za-km-z]+[0-9A-Za-z]{6}$/);
    expect((await client.verifyKey({ caller: verifier("ws_1"), key })).code).toBe(VerifyCode.VALID);
    const rerolled = await client.rerollKey({ caller: callerOf("ws_1", "*"), keyId, expiration: 0n });
    expect(rerolled.key).toMatch(/^sk_lkc_/);
    expect((await client.verifyKey({ caller: verifier("ws_1"), key: rerolled.key })).code).toBe(
      VerifyCode.VALID,
    );
    expect((await client.getApi({ caller: callerOf("ws_1", "*"), apiId })).api).toMatchObject({
      keyFormat: "checksum",
      leakPolicy: "revoke",
    });
  });

  it("answers NOT_FOUND for a mistyped one without asking the store or keeping it in the cache", async () => {
    const { client, seed, api, deps } = kit();
    const { key } = await seed.key({ apiId: await api("ws_1", { keyFormat: "checksum" }) });
    const typo = `${key.slice(0, 10)}${key[10] === "a" ? "b" : "a"}${key.slice(11)}`;
    const store = deps.store as MemoryKeysStore;
    let lookups = 0;
    const original = store.findKeysByHash.bind(store);
    store.findKeysByHash = (lookups_) => {
      lookups++;
      return original(lookups_);
    };
    for (let i = 0; i < 50; i++) {
      const res = await client.verifyKey({ caller: verifier("ws_1"), key: typo });
      expect(res).toMatchObject({ valid: false, code: VerifyCode.NOT_FOUND });
      expect(res.keyId).toBeUndefined();
    }
    expect(lookups).toBe(0);
    expect(deps.keyCache.size).toBe(0);
    // A plain key that was never created costs its lookup, as before.
    await client.verifyKey({ caller: verifier("ws_1"), key: "sk_3mJr7AoUXx2Wqd" });
    expect(lookups).toBe(1);
  });

  it("keeps plain keys working, and refuses a plain key a prefix that would claim the format", async () => {
    const { client, seed, api } = kit();
    const apiId = await api("ws_1");
    const { key } = await seed.key({ apiId, prefix: "sk" });
    expect((await client.verifyKey({ caller: verifier("ws_1"), key })).code).toBe(VerifyCode.VALID);
    expect(
      await invalidAt(client.createKey({ caller: callerOf("ws_1", "*"), apiId, prefix: "acme_lkc" })),
    ).toEqual({
      location: "/prefix",
      message: "a prefix ending in 'lkc' is kept for checksummed keys",
    });
    expect(
      await invalidAt(client.createApi({ caller: callerOf("ws_1", "*"), name: "x", keyFormat: "crc" })),
    ).toEqual({ location: "/keyFormat", message: "keyFormat must be plain or checksum" });
  });
});

describe("keys.reportLeak", () => {
  it("revokes a key of any workspace, once: one key.leaked, one audit record by the system", async () => {
    const { client, seed, api, deps, leaked, audit } = kit();
    const apiId = await api("ws_2");
    const { key, keyId } = await seed.key({ apiId, workspaceId: "ws_2" });
    expect((await client.verifyKey({ caller: verifier("ws_2"), key })).code).toBe(VerifyCode.VALID);
    const before = audit().length;
    expect(await client.reportLeak({ key, url: "https://github.com/acme/app/blob/main/.env" })).toMatchObject(
      {},
    );
    expect(await client.reportLeak({ key })).toMatchObject({});
    await deps.leakReports.settled();
    expect((await client.verifyKey({ caller: verifier("ws_2"), key })).code).toBe(VerifyCode.DISABLED);
    expect(leaked()).toEqual([
      {
        id: expect.stringMatching(/^evt_/),
        workspaceId: "ws_2",
        data: {
          keyId,
          apiId,
          source: "report",
          action: "revoked",
          url: "https://github.com/acme/app/blob/main/.env",
        },
      },
    ]);
    expect(audit().slice(before)).toEqual([
      expect.objectContaining({
        workspaceId: "ws_2",
        actorType: "system",
        actorId: "system",
        operation: "keys.reportLeak",
        resources: [
          { type: "key", id: keyId },
          { type: "api", id: apiId },
        ],
        outcome: "success",
        fields: ["revoked"],
      }),
    ]);
  });

  it("flags a key of an API whose leakPolicy is flag: it keeps verifying, the leak is announced", async () => {
    const { client, seed, api, deps, leaked } = kit();
    const apiId = await api("ws_1", { leakPolicy: "flag" });
    const { key, keyId } = await seed.key({ apiId });
    await client.reportLeak({ key });
    await deps.leakReports.settled();
    expect((await client.verifyKey({ caller: verifier("ws_1"), key })).code).toBe(VerifyCode.VALID);
    expect(leaked().map((e) => e.data)).toEqual([
      { keyId, apiId, source: "report", action: "flagged", url: "" },
    ]);
  });

  it("acts on every workspace holding the string, and answers a string that is no key exactly alike", async () => {
    const { client, seed, api, deps, leaked } = kit();
    const a = await seed.key({ apiId: await api("ws_1") });
    // The same string imported into a second workspace is a second key.
    const apiB = await api("ws_2");
    await client.migrateKeys({
      caller: callerOf("ws_2", "*"),
      migrationId: "m",
      apiId: apiB,
      keys: [{ hash: a.hash }],
    });
    const known = await client.reportLeak({ key: a.key });
    const unknown = await client.reportLeak({ key: "sk_9vYkQ2f3NQnS7hH1cz5Q" });
    const mistyped = await client.reportLeak({ key: "sk_lkc_9vYkQ2f3NQnS7hH1cz5Q000000" });
    expect(unknown).toEqual(known);
    expect(mistyped).toEqual(known);
    await deps.leakReports.settled();
    expect(
      leaked()
        .map((e) => e.workspaceId)
        .sort(),
    ).toEqual(["ws_1", "ws_2"]);
  });

  it("refuses an empty or oversized key and a url that is not http(s), as input to fix", async () => {
    const { client } = kit();
    expect((await invalidAt(client.reportLeak({ key: "" }))).location).toBe("/key");
    expect((await invalidAt(client.reportLeak({ key: "x".repeat(513) }))).location).toBe("/key");
    expect((await invalidAt(client.reportLeak({ key: "sk_1", url: "javascript:alert(1)" }))).location).toBe(
      "/url",
    );
  });
});

describe("GitHub secret-scanning reports", () => {
  function github() {
    const k = kit();
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const dir = mkdtempSync(join(tmpdir(), "latchkey-github-"));
    const file = join(dir, "keys.json");
    const identifier = "90a421169f0a406205f1563a953312f0be898d3c7b6c06b681aa86a874555f4a";
    writeFileSync(
      file,
      JSON.stringify({
        public_keys: [
          {
            key_identifier: identifier,
            key: publicKey.export({ type: "spki", format: "pem" }),
            is_current: true,
          },
        ],
      }),
    );
    k.deps.githubKeys = new ScanningKeys({ location: file }, k.clock);
    const signed = (body: string) => sign("sha256", Buffer.from(body), privateKey).toString("base64");
    const report = (body: string, signature = signed(body), keyIdentifier = identifier) =>
      k.client.receiveGithubLeaks({ body: Buffer.from(body), keyIdentifier, signature });
    return { ...k, signed, report, identifier };
  }

  it("revokes the keys a signed report names and answers each token in GitHub's shape", async () => {
    const { seed, api, client, report, leaked } = github();
    const { key, keyId } = await seed.key({
      apiId: await api("ws_3", { keyFormat: "checksum" }),
      workspaceId: "ws_3",
    });
    const body = JSON.stringify([
      { token: key, type: "latchkey_key", url: "https://github.com/o/r/blob/x/a.txt", source: "content" },
      {
        token: "sk_lkc_notakeyatall0000",
        type: "latchkey_key",
        url: "https://github.com/o/r",
        source: "content",
      },
      { token: "sk_3mJr7AoUXx2WqdZZ", type: "latchkey_key", url: "", source: "npm" },
    ]);
    const answer = JSON.parse((await report(body)).answerJson);
    const sha = (t: string) => createHash("sha256").update(t).digest("hex");
    expect(answer).toEqual([
      { token_hash: sha(key), token_type: "latchkey_key", label: "true_positive" },
      { token_hash: sha("sk_lkc_notakeyatall0000"), token_type: "latchkey_key", label: "false_positive" },
      { token_hash: sha("sk_3mJr7AoUXx2WqdZZ"), token_type: "latchkey_key", label: "false_positive" },
    ]);
    expect((await client.verifyKey({ caller: verifier("ws_3"), key })).code).toBe(VerifyCode.DISABLED);
    expect(leaked().map((e) => e.data)).toEqual([
      {
        keyId,
        apiId: expect.any(String),
        source: "github",
        action: "revoked",
        url: "https://github.com/o/r/blob/x/a.txt",
      },
    ]);
  });

  it("refuses an unsigned report, a wrong signature, an unknown key and a signature replayed over another body", async () => {
    const { seed, api, client, report, signed, identifier, leaked } = github();
    const { key } = await seed.key({ apiId: await api("ws_1") });
    const body = JSON.stringify([{ token: key, type: "t", url: "", source: "content" }]);
    const other = JSON.stringify([{ token: "sk_x", type: "t", url: "", source: "content" }]);
    const refusals = [
      () => report(body, ""),
      () => report(body, Buffer.from("not a signature").toString("base64")),
      () => report(body, signed(body), "f".repeat(64)),
      () => report(body, signed(other)),
      () => report(body, signed(body), ""),
    ];
    for (const r of refusals) expect((await rejection(r())).reason).toBe(ErrorReason.UNAUTHENTICATED);
    expect((await client.verifyKey({ caller: verifier("ws_1"), key })).code).toBe(VerifyCode.VALID);
    expect(leaked()).toEqual([]);
    // Signed but not an array: input to fix, after the signature.
    expect((await invalidAt(report('{"token":"x"}'))).location).toBe("/body");
    expect(identifier).toHaveLength(64);
  });

  it("is refused as a precondition where no public keys are configured", async () => {
    const { client } = kit();
    expect(
      (
        await rejection(
          client.receiveGithubLeaks({ body: Buffer.from("[]"), keyIdentifier: "a", signature: "b" }),
        )
      ).reason,
    ).toBe(ErrorReason.PRECONDITION_FAILED);
  });
});
