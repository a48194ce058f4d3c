import type { IncomingMessage, ServerResponse } from "node:http";
import net from "node:net";
import fc from "fast-check";
import { type EdgeServer, listenEdge } from "../src/edge.ts";
import type { Exchange, Gateway } from "../src/gateway.ts";
import { readBody } from "../src/node-body.ts";
import { listenNode } from "../src/node-server.ts";
import { Problem } from "../src/problem.ts";

/**
 * The differential test of edge.ts against node:http (llhttp): the same raw bytes go to both
 * servers, each in front of a gateway that records what it was handed, and the two records must
 * agree. What the gateway reads of a request is compared (method, target, Authorization, Accept,
 * X-Forwarded-For, the body whole), and how many requests the bytes hold: a server that reads one more or one fewer
 * request out of the same bytes than the other is what request smuggling is made of.
 *
 * The edge may refuse what node:http reads (a 4xx and the connection closed) where the refusal is
 * harmless and documented in gateway/README.md; those refusals are counted by reason. Everything
 * else is a disagreement: the edge reading a request node:http refuses, or reading it differently.
 */

/** A request as the gateway was handed it. */
export interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  accept: string | undefined;
  /** X-Forwarded-For, repeated fields joined: auth.ts names the client of a root-key lookup by it. */
  forwardedFor: string | undefined;
  /** What the portal's routes read (portal-web.ts): Host, Cookie, Origin, Sec-Fetch-Site, X-Forwarded-Proto and -Host. */
  host: string | undefined;
  cookie: string | undefined;
  origin: string | undefined;
  secFetchSite: string | undefined;
  forwardedProto: string | undefined;
  forwardedHost: string | undefined;
  /** latin1, or TOO_LARGE when the server handed it over as longer than maxBodyBytes. */
  body: string;
}

/** node:http's view of a request, kept to explain a refusal of the edge's. */
interface NodeView {
  version: string;
  rawHeaders: string[];
}

export interface Observation {
  seen: Seen[];
  /** node:http's view of each request it handed over, in the order of `seen`. */
  views: (NodeView | undefined)[];
  /** The answers on the wire in order: the gateway's ("app"), or the status of one the server wrote itself. */
  answers: (number | "app")[];
  /** Whether the gateway's last answer closed the connection (connection: close). */
  closedAfterAnswer: boolean;
  /** The server did not close the connection within the case's time. */
  hung: boolean;
}

export type Verdict =
  | { kind: "agree" }
  | { kind: "stricter"; reason: string }
  | { kind: "disagree"; detail: string };

export const DIFF_MAX_BODY = 2048;
export const TOO_LARGE = "<too large>";
/** A request node:http handed over whose body never came whole: the gateway never acts on it. */
const INCOMPLETE = "<incomplete>";

/** A gateway that records each request and answers it: synchronously for targets under /sync, else on the next turn. */
class Recorder implements Gateway {
  seen: Seen[] = [];
  views: (NodeView | undefined)[] = [];
  readonly maxBodyBytes = DIFF_MAX_BODY;

  exchange(x: Exchange, body: Buffer | "too large"): void {
    const seen = {
      method: x.method,
      url: x.url,
      authorization: x.authorization,
      accept: x.accept,
      forwardedFor: x.forwardedFor,
      host: x.header?.("host"),
      cookie: x.header?.("cookie"),
      origin: x.header?.("origin"),
      secFetchSite: x.header?.("sec-fetch-site"),
      forwardedProto: x.header?.("x-forwarded-proto"),
      forwardedHost: x.header?.("x-forwarded-host"),
      body: body === "too large" ? TOO_LARGE : body.toString("latin1"),
    };
    this.record(seen, undefined);
    const answer = () =>
      body === "too large"
        ? x.reply(413, "text/plain", "large", { "x-app": "1", connection: "close" })
        : x.reply(200, "text/plain", "ok", { "x-app": "1" });
    if (x.url.startsWith("/sync")) answer();
    else setImmediate(answer);
  }

  // The body read as the gateway reads it (node-body.ts). Recorded in the order the requests came, each once its body is whole (never, if it is not).
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    const at = this.seen.length;
    this.record(
      {
        method: req.method ?? "?",
        url: req.url ?? "/",
        authorization: req.headers.authorization,
        accept: req.headers.accept,
        // As the gateway's NodeExchange reads it.
        forwardedFor: joined(req.headers["x-forwarded-for"]),
        host: req.headers.host,
        cookie: req.headers.cookie,
        origin: joined(req.headers.origin),
        secFetchSite: joined(req.headers["sec-fetch-site"]),
        forwardedProto: joined(req.headers["x-forwarded-proto"]),
        forwardedHost: joined(req.headers["x-forwarded-host"]),
        body: INCOMPLETE,
      },
      { version: req.httpVersion, rawHeaders: req.rawHeaders },
    );
    const seen = this.seen[at]!;
    const answer = (body: string) => {
      seen.body = body;
      const send = () => {
        if (body === TOO_LARGE) res.writeHead(413, { "x-app": "1", connection: "close" }).end("large");
        else res.writeHead(200, { "x-app": "1" }).end("ok");
      };
      if (seen.url.startsWith("/sync")) send();
      else setImmediate(send);
    };
    readBody(req, DIFF_MAX_BODY).then(
      (body) => answer(body.toString("latin1")),
      // Too large: answered 413; a body that never ended stays INCOMPLETE, unanswered.
      (err: unknown) => {
        if (err instanceof Problem && err.status === 413) answer(TOO_LARGE);
      },
    );
  };

  private record(seen: Seen, view: NodeView | undefined) {
    this.seen.push(seen);
    this.views.push(view);
  }

  async close() {}
}

/** One edge and one node:http server, each with its own recorder; a pair serves one case at a time. */
export class ServerPair {
  private constructor(
    private readonly edge: EdgeServer,
    private readonly node: EdgeServer,
    private readonly edgeRecorder: Recorder,
    private readonly nodeRecorder: Recorder,
  ) {}

  static async start(): Promise<ServerPair> {
    const edgeRecorder = new Recorder();
    const nodeRecorder = new Recorder();
    const edge = await listenEdge(edgeRecorder, 0, "127.0.0.1");
    // node:http refuses these itself, without telling its listener; handed over instead, they are
    // requests node:http read, and the edge's refusal of them is counted with its reason.
    const node = await listenNode(nodeRecorder, 0, "127.0.0.1", {}, (server) => {
      // Read off the server at each request (its createServer option sets it).
      Object.assign(server, { requireHostHeader: false });
      server.on("checkExpectation", nodeRecorder.handle);
    });
    return new ServerPair(edge, node, edgeRecorder, nodeRecorder);
  }

  async run(bytes: Buffer, timeoutMs = 10_000): Promise<{ edge: Observation; node: Observation }> {
    this.edgeRecorder.seen = [];
    this.edgeRecorder.views = [];
    this.nodeRecorder.seen = [];
    this.nodeRecorder.views = [];
    const [edge, node] = await Promise.all([
      send(this.edge.port, bytes, timeoutMs),
      send(this.node.port, bytes, timeoutMs),
    ]);
    const n = this.nodeRecorder;
    const whole = n.seen.map((_, i) => i).filter((i) => n.seen[i]!.body !== INCOMPLETE);
    return {
      edge: { ...edge, seen: this.edgeRecorder.seen, views: this.edgeRecorder.views },
      node: { ...node, seen: whole.map((i) => n.seen[i]!), views: whole.map((i) => n.views[i]) },
    };
  }

  async close() {
    await Promise.all([this.edge.close(), this.node.close()]);
  }
}

const ANSWER_HEAD = /HTTP\/1\.1 (\d{3})[^\r\n]*\r\n((?:[^\r\n]+\r\n)*)\r\n/g;

/** Sends the bytes, ends the client's side, and reads what comes back until the server closes. */
function send(port: number, bytes: Buffer, timeoutMs: number) {
  return new Promise<Omit<Observation, "seen" | "views">>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    const received: Buffer[] = [];
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      socket.destroy();
    }, timeoutMs);
    socket.on("data", (d: Buffer) => received.push(d));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(received).toString("latin1");
      const answers: (number | "app")[] = [];
      let closedAfterAnswer = false;
      for (const m of text.matchAll(ANSWER_HEAD)) {
        const status = Number(m[1]);
        const headers = m[2]!.toLowerCase();
        if (headers.includes("x-app: 1")) {
          answers.push("app");
          closedAfterAnswer = headers.includes("connection: close");
        } else if (status !== 100) answers.push(status);
      }
      resolve({ answers, closedAfterAnswer, hung });
    });
    socket.on("connect", () => socket.end(bytes));
  });
}

const joined = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(", ") : value);

function same(a: Seen | undefined, b: Seen | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return (
    a.method === b.method &&
    a.url === b.url &&
    a.authorization === b.authorization &&
    a.accept === b.accept &&
    a.forwardedFor === b.forwardedFor &&
    a.host === b.host &&
    a.cookie === b.cookie &&
    a.origin === b.origin &&
    a.secFetchSite === b.secFetchSite &&
    a.forwardedProto === b.forwardedProto &&
    a.forwardedHost === b.forwardedHost &&
    a.body === b.body
  );
}

/** Whether the edge's reading of `bytes` agrees with node:http's, is a documented refusal, or neither. */
export function compare(edge: Observation, node: Observation, bytes: Buffer): Verdict {
  if (edge.hung) return { kind: "disagree", detail: "the edge did not close the connection" };
  if (node.hung) return { kind: "disagree", detail: "node:http did not close the connection" };
  const E = edge.seen;
  const N = node.seen;
  let i = 0;
  while (i < E.length && i < N.length && same(E[i], N[i])) i++;
  if (i === E.length && i === N.length) return { kind: "agree" };
  if (i === E.length) {
    const reason = whyTheEdgeStopped(edge, node, i, bytes);
    return reason === undefined
      ? { kind: "disagree", detail: `the edge read ${E.length} request(s), node:http ${N.length}` }
      : { kind: "stricter", reason };
  }
  const e = E[i]!;
  if (i === N.length) {
    // A chunked body whose sizes already pass the limit is refused before its bytes come; node:http
    // counts the bytes, which never came.
    if (e.body === TOO_LARGE) return { kind: "stricter", reason: "413 before the body arrived" };
    return { kind: "disagree", detail: `the edge read request ${i + 1}, which node:http did not` };
  }
  return {
    kind: "disagree",
    detail: `request ${i + 1} differs: edge ${JSON.stringify(e)}, node:http ${JSON.stringify(N[i])}`,
  };
}

/** Why a request's connection closes after its answer, as RFC 9112 reads it; undefined: it stays open. */
function closes(view: NodeView, seen: Seen): string | undefined {
  const tokens = headerValues(view, "connection").flatMap((v) =>
    v
      .toLowerCase()
      .split(",")
      .map((t) => t.trim()),
  );
  if (seen.body === TOO_LARGE) return "a body too large (413)";
  if (tokens.includes("close")) return "Connection: close";
  if (tokens.includes("upgrade") && header(view, "upgrade") > 0) return "an Upgrade";
  if (view.version === "1.0" && !tokens.includes("keep-alive")) return "HTTP/1.0 without keep-alive";
  return undefined;
}

const header = (view: NodeView, name: string) =>
  view.rawHeaders.filter((_, i) => i % 2 === 0 && view.rawHeaders[i]!.toLowerCase() === name).length;
const headerValues = (view: NodeView, name: string) =>
  view.rawHeaders.filter((_, i) => i % 2 === 1 && view.rawHeaders[i - 1]!.toLowerCase() === name);

/**
 * Why the edge read no further than node:http: each reason is a refusal of the edge's that
 * gateway/README.md documents as harmless (or undefined: no known reason, a disagreement).
 */
function whyTheEdgeStopped(
  edge: Observation,
  node: Observation,
  i: number,
  bytes: Buffer,
): string | undefined {
  const status = edge.answers.find((a) => a !== "app");
  if (status === undefined) {
    // The edge's answer to request i closed the connection: rightly so when node:http's view of that
    // request asks for it too (node:http may still have read the requests behind it).
    const last = node.views[i - 1];
    const why = last === undefined ? undefined : closes(last, node.seen[i - 1]!);
    return edge.closedAfterAnswer && why !== undefined
      ? `the edge closed after answering ${why}, where node:http read on`
      : undefined;
  }
  const next = node.seen[i]!;
  const view = node.views[i];
  if (status === 431) return "head over 16 KiB as the edge counts it (every byte of the head)";
  if (status === 417)
    return "Expect other than 100-continue (node:http: anywhere in the list, or any on HTTP/1.0)";
  if (status !== 400 || view === undefined) return undefined;
  const raw = bytes.toString("latin1");
  if (!next.url.startsWith("/")) return "a target not in origin form (absolute form, asterisk form)";
  if (view.version !== "1.0" && view.version !== "1.1") return `HTTP/${view.version}`;
  if (/[!-~](?: {2,}[!-~]+ +| +[!-~]+ {2,})(?:HTTP|RTSP|ICE)\/\d/.test(raw))
    return "a request line with more than one space between its parts";
  if (/[!-~] +[!-~]+ +(?:RTSP|ICE)\/\d/.test(raw)) return "RTSP/ or ICE/ in place of HTTP/";
  if (header(view, "host") > 1) return "Host more than once";
  if (header(view, "host") === 0 && view.version === "1.1")
    return "HTTP/1.1 without Host (node:http refuses it too, after reading it)";
  const te = headerValues(view, "transfer-encoding");
  if (te.length > 0 && view.version === "1.0") return "Transfer-Encoding on HTTP/1.0";
  if (te.length > 1 || (te.length === 1 && !/^chunked$/i.test(te[0]!)))
    return "Transfer-Encoding other than one `chunked`";
  // Node 20's llhttp refuses a tab after Content-Length's digits, as the edge does; Node 22's and later read it.
  if (/\r\ncontent-length:[ \t]*[0-9]+ *\t[ \t]*\r\n/i.test(raw))
    return "a tab after Content-Length's digits";
  if (headerValues(view, "content-length").some((v) => v.replace(/^0+(?=\d)/, "").length > 15))
    return "Content-Length of more than 15 digits";
  if (/\r\n0*[0-9a-fA-F]{9,}[\r;]/.test(raw)) return "a chunk size of more than 8 hex digits";
  if (/\r\n[0-9a-fA-F]+;(=|[^\r\n]*(=[;\r]|=[!#-'*+.^-z|~-]*"|;;|;=|"[^"\r\n]*"[^;\r]))/.test(raw))
    return "a chunk extension with an empty name or value, or quoted oddly";
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Generation: requests built from parts that are valid, or one of their known-bad variants, then
// mutated byte by byte.

const pick = <T>(...values: T[]) => fc.constantFrom(...values);
/**
 * One request's parts, each one of its known-bad variants once in `oneIn` draws (else the usual
 * value): streams are drawn from tame, middling and wild requests, so that both the requests
 * node:http reads and those it refuses are well represented.
 */
function requestArbitrary(oneIn: number) {
  const mostly = <T>(usual: T, ...odd: T[]) =>
    fc.oneof(
      { weight: (oneIn - 1) * odd.length, arbitrary: fc.constant(usual) },
      { weight: odd.length, arbitrary: pick(...odd) },
    );
  const onceOrTwice = (field: fc.Arbitrary<string>) =>
    fc.oneof(
      { weight: oneIn - 1, arbitrary: field.map((v) => [v]) },
      { weight: 1, arbitrary: fc.tuple(field, field) },
    );
  const METHODS = mostly(
    "POST",
    "GET",
    "HEAD",
    "PUT",
    "DELETE",
    "OPTIONS",
    "PATCH",
    "get",
    "post",
    "Post",
    "CONNECT",
    "PRI",
    "FOO",
    "G\0T",
    "PROPFIND",
    "SOURCE",
    "TRACE",
    "",
  );
  const TARGETS = mostly(
    "/v2/ratelimits.limit",
    "/sync/v2/keys.verifyKey",
    "/healthz",
    "/v2/keys.verifyKey?x=1&y=%20",
    "/a#frag",
    "/sync?q#f?#",
    "*",
    "http://t/v2/ratelimits.limit",
    "https://t:443/x",
    "//x",
    "/a b",
    "/\0",
    "/\x7f",
    "/\x80",
    "/\xff",
    "/a\tb",
    "/%00",
    '/"<>{}|\\^`',
    "",
    "x",
    "t:443",
  );
  const VERSIONS = mostly(
    "HTTP/1.1",
    "HTTP/1.0",
    "HTTP/1.2",
    "HTTP/2.0",
    "HTTP/0.9",
    "HTTP/3.0",
    "http/1.1",
    "HTTP/1",
    "HTTP/11",
    "HTTP/1.1 ",
    "RTSP/1.0",
    "ICE/1.0",
    "",
  );
  const SPACES = mostly(" ", "  ", "\t", "");
  const EOL = mostly("\r\n", "\n", "\r", "\r\r\n", "\n\r");
  const SEPARATORS = mostly(": ", ":", ":  ", ":\t", " : ", " :", "\t:", ":\r\n ", ":\0");
  const VALUE_ODDITIES = mostly(
    "",
    "\0",
    "\x01",
    "\x7f",
    "\x80",
    "\xff",
    "\r",
    "\n",
    " ",
    "\t",
    ",",
    ";",
    '"',
  );

  const SPECIAL = fc.record({
    host: mostly(1, 0, 2),
    hostValue: mostly("t", "", "a b", "t:80", "\0"),
    authorization: mostly(
      ["Bearer k1"],
      [],
      ["Bearer k1", "Bearer k2"],
      ["Bearer  k1 "],
      ["bearer k\x80"],
      [""],
      ["Bearer k\0"],
    ),
    accept: mostly(
      ["application/json"],
      [],
      ["application/json", "application/problem+json"],
      ["*/*  "],
      ["\ttext/plain\t"],
    ),
    forwardedFor: mostly(
      [] as string[],
      ["192.0.2.1"],
      ["192.0.2.1, 10.0.0.1"],
      ["192.0.2.1", "10.0.0.1"],
      [" 192.0.2.1\t"],
      ["", "10.0.0.1"],
      ["a,,b", "c"],
    ),
    cookie: mostly([] as string[], ["portal_session=pat_1"], ["a=1", "portal_session=pat_2"], [" a=1; b=2 "]),
    origin: mostly(
      [] as string[],
      ["https://keys.example.com"],
      ["null"],
      ["https://a.example", "https://b.example"],
    ),
    secFetchSite: mostly([] as string[], ["same-origin"], [" cross-site\t"], ["same-origin", "cross-site"]),
    contentType: mostly(["application/json"], [], ["a", "b"]),
    connection: mostly(
      [] as string[],
      ["close"],
      ["keep-alive"],
      ["Close"],
      ["close\t"],
      ["keep-alive, close"],
      ["close, keep-alive"],
      ["upgrade"],
      ["Upgrade, keep-alive"],
      ["closed"],
      ["x, close"],
    ),
    upgrade: mostly(false, true),
    expect: mostly(
      [] as string[],
      ["100-continue"],
      ["100-Continue"],
      ["200-ok"],
      ["foo, 100-continue"],
      ["100-continue", "100-continue"],
    ),
    extra: fc.array(
      fc.record({
        name: mostly("X-Extra", "X Extra", "X\0", "X\x7f", "X:Y", "", "X\x80", "(x)", "x-é"),
        value: fc.tuple(fc.stringMatching(/^[ -~]{0,12}$/), VALUE_ODDITIES).map(([v, o]) => v + o),
      }),
      { maxLength: 2 },
    ),
    // A header padded so the head lands near 16 KiB: null, or how far from 16,384 bytes.
    pad: mostly(null as number | null, -4096, -40, -2, -1, 0, 1, 2, 40),
  });

  const CONTENT_LENGTHS = mostly(
    "exact",
    "+exact",
    "-exact",
    " exact",
    "0exact",
    "000exact",
    "exact ",
    "exact\t",
    "exact,exact",
    "exact, exact",
    "exact exact",
    "exact+1",
    "exact-1",
    "",
    "0x10",
    "1e3",
    "99999999999999999999",
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
    "999999999999999",
    "1000000000000000",
    "4096",
  );
  const TRANSFER_ENCODINGS = mostly(
    "chunked",
    "Chunked",
    "CHUNKED",
    " chunked",
    "chunked ",
    "chunked\t",
    "chunked, identity",
    "identity, chunked",
    "gzip, chunked",
    "identity",
    "xchunked",
    "chunkedx",
    "chunked;q=1",
    "chunked,",
    "chunked , chunked",
    "",
  );
  const CHUNK_SIZES = mostly(
    "hex",
    "HEX",
    "0hex",
    "000000000hex",
    "0xhex",
    "+hex",
    "-hex",
    " hex",
    "hex ",
    "hex\t",
    "ffffffffffffffffff",
    "1ffffffff",
    "hex+1",
    "hex-1",
    "",
  );
  const CHUNK_EXTENSIONS = mostly(
    "",
    ";a",
    ";a=b",
    ';a="b c"',
    ';a="b\\"c"',
    ";a=b;c",
    "; a",
    " ;a",
    "\t;a",
    ";a =b",
    ";a=",
    ";=b",
    ";;",
    ";a;;b",
    ";a=b\0",
    ';a="b',
    ';a="b"c',
    ";a=b c",
    ";a\x80",
    ";" + "e".repeat(1100),
  );
  const TRAILERS = fc.array(
    mostly(
      "X-T: v",
      "X-T : v",
      "bad",
      "X-T: a\x01",
      " folded",
      "X-T:v",
      "Content-Length: 5",
      ": v",
      "X-T: \x80",
    ),
    { maxLength: 2 },
  );

  const BODY = fc.oneof(
    { weight: 6, arbitrary: fc.stringMatching(/^[ -~]{0,24}$/) },
    { weight: 1, arbitrary: fc.string({ unit: "binary-ascii", maxLength: 24 }) },
    { weight: 1, arbitrary: fc.constantFrom("x".repeat(DIFF_MAX_BODY), "y".repeat(DIFF_MAX_BODY + 1)) },
  );

  const FRAMING = fc.oneof(
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant("none" as const), trailing: mostly("", "\r\n", "\n", "x") }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant("length" as const),
        values: onceOrTwice(CONTENT_LENGTHS),
        body: BODY,
        te: mostly([] as string[], ["chunked"], ["identity"]),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant("chunked" as const),
        te: onceOrTwice(TRANSFER_ENCODINGS),
        length: mostly(null as string | null, "0", "5"),
        chunks: fc.array(
          fc.record({
            data: BODY,
            size: CHUNK_SIZES,
            ext: CHUNK_EXTENSIONS,
            end: mostly("\r\n", "\n", "", "XX", "\r"),
            sizeEnd: mostly("\r\n", "\n", "\r"),
          }),
          { maxLength: 3 },
        ),
        last: mostly("0", "00", "0;x=y", "000000000000000000", "0 ", "0x0"),
        trailers: TRAILERS,
        end: mostly("\r\n", "\n", ""),
      }),
    },
  );

  return fc.record({
    method: METHODS,
    target: TARGETS,
    version: VERSIONS,
    sp1: SPACES,
    sp2: SPACES,
    eol: EOL,
    separator: SEPARATORS,
    special: SPECIAL,
    framing: FRAMING,
    order: fc.integer({ min: 0, max: 1_000_000 }),
  });
}

type Request = ReturnType<typeof requestArbitrary> extends fc.Arbitrary<infer T> ? T : never;

function chunkSize(format: string, n: number): string {
  const hex = n.toString(16);
  if (format === "hex+1") return (n + 1).toString(16);
  if (format === "hex-1") return Math.max(0, n - 1).toString(16);
  return format.replace("HEX", hex.toUpperCase()).replace("hex", hex);
}

/** The bytes of one request, as latin1 text. */
function build(r: Request): string {
  const s = r.special;
  const lines: string[] = [];
  const field = (name: string, value: string) => lines.push(`${name}${r.separator}${value}`);
  for (let i = 0; i < s.host; i++) field("Host", s.hostValue);
  for (const v of s.authorization) field("Authorization", v);
  for (const v of s.accept) field("Accept", v);
  for (const v of s.forwardedFor) field("X-Forwarded-For", v);
  for (const v of s.cookie) field("Cookie", v);
  for (const v of s.origin) field("Origin", v);
  for (const v of s.secFetchSite) field("Sec-Fetch-Site", v);
  for (const v of s.contentType) field("Content-Type", v);
  for (const v of s.connection) field("Connection", v);
  if (s.upgrade) field("Upgrade", "websocket");
  for (const v of s.expect) field("Expect", v);
  for (const x of s.extra) field(x.name, x.value);
  let body = "";
  const f = r.framing;
  if (f.kind === "none") body = f.trailing;
  else if (f.kind === "length") {
    const n = Buffer.byteLength(f.body, "latin1");
    for (const v of f.values)
      field(
        "Content-Length",
        v
          .replace("exact+1", String(n + 1))
          .replace("exact-1", String(Math.max(0, n - 1)))
          .replaceAll("exact", String(n)),
      );
    for (const v of f.te) field("Transfer-Encoding", v);
    body = f.body;
  } else {
    for (const v of f.te) field("Transfer-Encoding", v);
    if (f.length !== null) field("Content-Length", f.length);
    for (const c of f.chunks) {
      body += `${chunkSize(c.size, c.data.length)}${c.ext}${c.sizeEnd}${c.data}${c.end}`;
    }
    body += `${f.last}\r\n${f.trailers.map((t) => `${t}\r\n`).join("")}${f.end}`;
  }
  // The header fields in an order drawn from `order`.
  const order = lines.map((line, i) => ({ line, key: (r.order * (i + 7)) % 101 }));
  order.sort((a, b) => a.key - b.key);
  const fields = order.map((o) => o.line);
  const requestLine = `${r.method}${r.sp1}${r.target}${r.sp2}${r.version}`;
  if (s.pad !== null) {
    const head = [requestLine, ...fields].join("\r\n").length + 2 + "X-Pad: ".length + 2;
    fields.push(`X-Pad: ${"p".repeat(Math.max(0, 16 * 1024 + s.pad - head))}`);
  }
  return `${[requestLine, ...fields].map((l) => l + r.eol).join("")}${r.eol}${body}`;
}

const INTERESTING_BYTES = [0, 9, 10, 13, 32, 34, 44, 48, 58, 59, 65, 92, 97, 127, 128, 255];

const MUTATION = fc.record({
  kind: pick("insert", "replace", "delete", "duplicate-line", "truncate", "lf-only", "case"),
  at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
  byte: fc.oneof(pick(...INTERESTING_BYTES), fc.integer({ min: 0, max: 255 })),
});

type Mutation = typeof MUTATION extends fc.Arbitrary<infer T> ? T : never;

function mutate(text: string, m: Mutation): string | undefined {
  const at = Math.floor(m.at * text.length);
  const byte = String.fromCharCode(m.byte);
  switch (m.kind) {
    case "insert":
      return text.slice(0, at) + byte + text.slice(at);
    case "replace":
      return text.slice(0, at) + byte + text.slice(at + 1);
    case "delete":
      return text.slice(0, at) + text.slice(at + 1);
    case "truncate":
      return text.slice(0, at);
    case "lf-only": {
      const cr = text.indexOf("\r\n", at);
      return cr === -1 ? text : text.slice(0, cr) + text.slice(cr + 1);
    }
    case "case": {
      const c = text[at] ?? "";
      const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
      return text.slice(0, at) + flipped + text.slice(at + 1);
    }
    case "duplicate-line": {
      const start = text.lastIndexOf("\r\n", at) + 2;
      const end = text.indexOf("\r\n", at);
      if (start < 2 || end === -1) return text;
      const line = text.slice(start, end + 2);
      return text.slice(0, start) + line + line + text.slice(start);
    }
  }
}

/** A byte stream: one to three requests one after the other, the whole then mutated zero to three times. */
export const STREAM = fc
  .record({
    requests: fc.oneof(
      { weight: 4, arbitrary: fc.array(requestArbitrary(60), { minLength: 1, maxLength: 3 }) },
      { weight: 2, arbitrary: fc.array(requestArbitrary(8), { minLength: 1, maxLength: 3 }) },
      { weight: 1, arbitrary: fc.array(requestArbitrary(2), { minLength: 1, maxLength: 3 }) },
    ),
    mutations: fc.oneof(
      { weight: 3, arbitrary: fc.constant([] as Mutation[]) },
      { weight: 1, arbitrary: fc.array(MUTATION, { minLength: 1, maxLength: 3 }) },
    ),
  })
  .map(({ requests, mutations }) => {
    let text = requests.map(build).join("");
    for (const m of mutations) text = mutate(text, m) ?? text;
    return Buffer.from(text, "latin1");
  });

/** Hand-written cases: each request-smuggling class by name, with a valid request after it. */
export const CORPUS: string[] = (() => {
  const next = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
  const post = (headers: string, body: string) =>
    `POST /v2/x HTTP/1.1\r\nHost: t\r\n${headers}\r\n${body}${next}`;
  const chunked = (body: string) => post("Transfer-Encoding: chunked\r\n", body);
  const cases = [
    post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n"),
    post("Content-Length: 3\r\nContent-Length: 3\r\n", "abc"),
    post("Content-Length: 3\r\nContent-Length: 4\r\n", "abcd"),
    post("Content-Length: +5\r\n", "abcde"),
    post("Content-Length: -5\r\n", "abcde"),
    post("Content-Length:  5 \r\n", "abcde"),
    post("Content-Length: 005\r\n", "abcde"),
    post("Content-Length: 5\t\r\n", "abcde"),
    post("Content-Length: 99999999999999999999\r\n", "abcde"),
    post("Content-Length: 18446744073709551617\r\n", "abcde"),
    post("Content-Length: 5, 5\r\n", "abcde"),
    post("Content-Length: 5 5\r\n", "abcde"),
    post("Content-Length:\r\n", ""),
    post("Transfer-Encoding: chunked, identity\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding: identity\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding: Chunked\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding:  chunked\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding: xchunked\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding: chunked\t\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"),
    post("Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"),
    `POST /v2/x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n${next}`,
    post("X-A: 1\r\n folded\r\n", ""),
    post("X-A: 1\r\n\tfolded\r\n", ""),
    post("X-A: a\rb\r\n", ""),
    post("X-A: a\nb\r\n", ""),
    post("X-A: a\0b\r\n", ""),
    post("X-A: a\x7fb\r\n", ""),
    post("X\0A: b\r\n", ""),
    post("X-A : b\r\n", ""),
    post("X-A\t: b\r\n", ""),
    `GET /a\0b HTTP/1.1\r\nHost: t\r\n\r\n${next}`,
    `G\x01T / HTTP/1.1\r\nHost: t\r\n\r\n${next}`,
    `GET /healthz HTTP/1.1\nHost: t\n\n${next}`,
    `GET /healthz HTTP/1.1\r\nHost: t\n\r\n${next}`,
    chunked("ffffffffffffffffff\r\nabc\r\n0\r\n\r\n"),
    chunked("1ffffffff\r\nabc\r\n0\r\n\r\n"),
    chunked("0x3\r\nabc\r\n0\r\n\r\n"),
    chunked("+3\r\nabc\r\n0\r\n\r\n"),
    chunked(" 3\r\nabc\r\n0\r\n\r\n"),
    chunked("3 \r\nabc\r\n0\r\n\r\n"),
    chunked("3;a=b\r\nabc\r\n0\r\n\r\n"),
    chunked("3 ;a=b\r\nabc\r\n0\r\n\r\n"),
    chunked("3;a=\x01\r\nabc\r\n0\r\n\r\n"),
    chunked('3;a="b c"\r\nabc\r\n0\r\n\r\n'),
    chunked("3\r\nabc\r\n0\r\nX-T: v\r\n\r\n"),
    chunked("3\r\nabc\r\n0\r\nX-T : v\r\n\r\n"),
    chunked("3\r\nabc\r\n0\r\nX-T: \x01\r\n\r\n"),
    chunked("3\r\nabc\r\n0\r\nX-T: v\r\n folded\r\n\r\n"),
    chunked("3\r\nabc\n0\r\n\r\n"),
    chunked("3\nabc\r\n0\r\n\r\n"),
    chunked("3\r\nabcd\r\n0\r\n\r\n"),
    `GET /healthz HTTP/1.1\r\nHost: t\r\nX-Pad: ${"p".repeat(16 * 1024 - 60)}\r\n\r\n${next}`,
    `GET /healthz HTTP/1.1\r\nHost: t\r\nX-Pad: ${"p".repeat(16 * 1024)}\r\n\r\n${next}`,
    `GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n${next}`,
    `GET /healthz HTTP/1.0\r\n\r\n${next}`,
    `GET http://t/healthz HTTP/1.1\r\nHost: t\r\n\r\n${next}`,
    `OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n${next}`,
    `GET /healthz HTTP/1.2\r\nHost: t\r\n\r\n${next}`,
    `GET /healthz HTTP/2.0\r\nHost: t\r\n\r\n${next}`,
    `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n${next}`,
    `get /healthz HTTP/1.1\r\nHost: t\r\n\r\n${next}`,
    `GET /healthz HTTP/1.1\r\n\r\n${next}`,
    `GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n${next}`,
    `CONNECT t:443 HTTP/1.1\r\nHost: t\r\n\r\n${next}`,
    `CONNECT /x HTTP/1.1\r\nHost: t\r\n\r\n${next}`,
    `GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n${next}`,
    `GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n${next}`,
    `GET /healthz HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\r\n${next}`,
    `POST /v2/x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc${next}`,
    `\r\n${next}`,
    `${next}${next}${next}`,
  ];
  return cases;
})();

export interface DifferentialResult {
  cases: number;
  agreed: number;
  /** Of the cases agreed on, those where both read at least one request; and the requests both read. */
  agreedReading: number;
  requestsRead: number;
  stricter: Map<string, number>;
  disagreements: { bytes: Buffer; detail: string }[];
}

/**
 * Runs the corpus, then `cases` generated streams from `seed`, over `pairs` server pairs at once;
 * `onProgress` hears every 1,000 cases.
 */
export async function runDifferential(options: {
  seed: number;
  cases: number;
  pairs?: number;
  onProgress?: (done: number, result: DifferentialResult) => void;
}): Promise<DifferentialResult> {
  const pairs = await Promise.all(Array.from({ length: options.pairs ?? 4 }, () => ServerPair.start()));
  const result: DifferentialResult = {
    cases: 0,
    agreed: 0,
    agreedReading: 0,
    requestsRead: 0,
    stricter: new Map(),
    disagreements: [],
  };
  const batchSize = 1_000;
  try {
    const batches = Math.ceil(options.cases / batchSize);
    for (let b = -1; b < batches; b++) {
      const streams =
        b === -1
          ? CORPUS.map((c) => Buffer.from(c, "latin1"))
          : fc.sample(STREAM, {
              seed: options.seed + b,
              numRuns: Math.min(batchSize, options.cases - b * batchSize),
            });
      let next = 0;
      await Promise.all(
        pairs.map(async (pair) => {
          for (let i = next++; i < streams.length; i = next++) {
            const bytes = streams[i]!;
            const { edge, node } = await pair.run(bytes);
            const verdict = compare(edge, node, bytes);
            result.cases++;
            if (verdict.kind === "agree") {
              result.agreed++;
              if (edge.seen.length > 0) result.agreedReading++;
              result.requestsRead += edge.seen.length;
            } else if (verdict.kind === "stricter")
              result.stricter.set(verdict.reason, (result.stricter.get(verdict.reason) ?? 0) + 1);
            else result.disagreements.push({ bytes, detail: verdict.detail });
          }
        }),
      );
      options.onProgress?.(result.cases, result);
    }
  } finally {
    await Promise.all(pairs.map((p) => p.close()));
  }
  return result;
}
