import { describe, expect, it } from "vitest";
import {
  compare,
  type Observation,
  runDifferential,
  type Seen,
  TOO_LARGE,
} from "../testing/edge-differential.ts";

/**
 * A bounded part of the differential run against node:http (the whole one, 100,000 cases and
 * more, is scripts/http-differential.sh): the hand-written smuggling corpus, then 3,000 generated
 * and mutated byte streams from a fixed seed.
 */
describe("the edge against node:http, on the same bytes", () => {
  it("reads every request node:http reads alike, or refuses it for a documented reason", {
    timeout: 120_000,
  }, async () => {
    const result = await runDifferential({ seed: 20261127, cases: 3_000, pairs: 4 });
    expect(
      result.disagreements.map(
        (d) => `${d.detail}: ${JSON.stringify(d.bytes.toString("latin1").slice(0, 300))}`,
      ),
    ).toEqual([]);
    expect(result.cases).toBeGreaterThan(3_000);
    // The generator is worth its cases only if many of them are requests both servers read.
    expect(result.agreedReading).toBeGreaterThan(result.cases / 4);
  });
});

describe("compare", () => {
  const request = (over: Partial<Seen> = {}): Seen => ({
    method: "POST",
    url: "/v2/x",
    authorization: "Bearer k",
    accept: undefined,
    forwardedFor: undefined,
    host: "t",
    cookie: undefined,
    origin: undefined,
    secFetchSite: undefined,
    forwardedProto: undefined,
    forwardedHost: undefined,
    body: "{}",
    ...over,
  });
  const observed = (seen: Seen[], over: Partial<Observation> = {}): Observation => ({
    seen,
    views: seen.map(() => ({ version: "1.1", rawHeaders: ["Host", "t"] })),
    answers: seen.map(() => "app"),
    closedAfterAnswer: false,
    hung: false,
    ...over,
  });
  const bytes = Buffer.from("POST /v2/x HTTP/1.1\r\n");

  it("agrees when both read the same requests", () => {
    expect(compare(observed([request()]), observed([request()]), bytes)).toEqual({ kind: "agree" });
  });

  it.each([
    ["the edge reads a request node:http refused", [request()], []],
    ["the edge reads one request more", [request(), request({ url: "/v2/y" })], [request()]],
    ["the bodies differ", [request({ body: "{" })], [request()]],
    ["the Authorization headers differ", [request({ authorization: "Bearer j" })], [request()]],
    [
      "the X-Forwarded-For fields differ",
      [request({ forwardedFor: "a,b" })],
      [request({ forwardedFor: "a, b" })],
    ],
    ["the edge stops without refusing", [], [request()]],
  ] as const)("calls it a disagreement when %s", (_what, edge, node) => {
    expect(compare(observed([...edge]), observed([...node]), bytes).kind).toBe("disagree");
  });

  it("calls a refusal of the edge's stricter when its reason is documented, and a disagreement when not", () => {
    const absolute = observed([request({ url: "http://t/v2/x" })]);
    expect(compare(observed([], { answers: [400] }), absolute, bytes)).toEqual({
      kind: "stricter",
      reason: "a target not in origin form (absolute form, asterisk form)",
    });
    expect(compare(observed([], { answers: [400] }), observed([request()]), bytes).kind).toBe("disagree");
  });

  it("calls a 413 before the body came stricter, and a close after it where node:http read on", () => {
    expect(compare(observed([request({ body: TOO_LARGE })]), observed([]), bytes).kind).toBe("stricter");
    const edge = observed([request({ body: TOO_LARGE })], { closedAfterAnswer: true });
    expect(compare(edge, observed([request({ body: TOO_LARGE }), request()]), bytes)).toEqual({
      kind: "stricter",
      reason: "the edge closed after answering a body too large (413), where node:http read on",
    });
  });

  it("calls a server that does not close the connection a disagreement", () => {
    expect(compare(observed([], { hung: true }), observed([]), bytes).kind).toBe("disagree");
  });
});
