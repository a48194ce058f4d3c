import fc from "fast-check";
import { afterAll, beforeAll } from "vitest";
import type { Gateway } from "../src/gateway.ts";
import { listen } from "../src/listen.ts";
import { type Operation, routes } from "../src/routes/index.ts";
import type { FuzzBody } from "./schema-arbitrary.ts";

// What the fuzz tests share: fuzz.test.ts over services that answer success, and test/in-memory/fuzz.test.ts
// over the real services.

/** One seed: the fuzz tests are deterministic. */
export const SEED = 20_261_127;

/** A failure, or undefined when the answer has the shape its status calls for. */
// biome-ignore lint/suspicious/noExplicitAny: the answer is checked field by field, whatever its shape.
export function shapeProblem(status: number, body: any): string | undefined {
  if (status >= 500) return `answered ${status}`;
  if (body === null || typeof body !== "object") return "the answer is not a JSON object";
  const requestId = body.meta?.requestId;
  if (typeof requestId !== "string" || !/^req_[a-zA-Z0-9]{16}$/.test(requestId)) return "no meta.requestId";
  if (Object.keys(body.meta).length !== 1) return "meta holds more than requestId";
  if (status < 300) {
    if (!("data" in body)) return "a success without data";
    const extra = Object.keys(body).filter((k) => !["meta", "data", "pagination"].includes(k));
    return extra.length > 0 ? `a success with ${extra.join(", ")}` : undefined;
  }
  const extra = Object.keys(body).filter((k) => k !== "meta" && k !== "error");
  if (extra.length > 0) return `an error with ${extra.join(", ")}`;
  const e = body.error;
  if (e === null || typeof e !== "object") return "no error object";
  const wrong = Object.keys(e).filter((k) => !["title", "detail", "status", "type", "errors"].includes(k));
  if (wrong.length > 0) return `error holds ${wrong.join(", ")}`;
  if (typeof e.title !== "string" || e.title === "") return "no error.title";
  if (typeof e.detail !== "string" || e.detail === "") return "no error.detail";
  if (e.status !== status) return `error.status ${e.status} on a ${status}`;
  if (typeof e.type !== "string" || !e.type.startsWith("https://unkey.com/docs/errors/"))
    return "no error.type";
  // As Unkey's BadRequestErrorDetails: a 400 always lists its violations (perhaps none).
  if (status === 400 && e.errors === undefined) return "a 400 without error.errors";
  if (e.errors !== undefined) {
    if (!Array.isArray(e.errors)) return "error.errors is not a list";
    for (const v of e.errors) {
      const keys = Object.keys(v).filter((k) => !["location", "message", "fix"].includes(k));
      if (keys.length > 0) return `a violation holds ${keys.join(", ")}`;
      if (typeof v.location !== "string" || !v.location.startsWith("/body"))
        return "a violation without location";
      if (typeof v.message !== "string" || v.message === "") return "a violation without message";
      if (v.fix !== undefined && typeof v.fix !== "string") return "a violation whose fix is not text";
    }
  }
  return undefined;
}

/** The statuses an operation documents (docs/openapi.json): 400, and the route's own errors. */
export const documented = (operation: Operation) =>
  new Set<number>([
    400,
    // A call no root key authenticates: the session or the code it carries may be refused.
    ...(routes[operation].auth !== undefined ? [401] : []),
    ...(routes[operation].errors ?? []),
  ]);

export interface Sent {
  label: string;
  status: number;
  problem: string | undefined;
  raw: string | Buffer;
  /** The answer, parsed (its text when it is not JSON). */
  body: unknown;
}

/**
 * A failure, or undefined: a body whose `refusedAt` is set must be answered 400 naming exactly that
 * place first; any other, as shapeProblem says.
 */
export function refusalProblem(body: FuzzBody, sent: Sent): string | undefined {
  if (sent.problem !== undefined || body.refusedAt === undefined) return sent.problem;
  const location = (sent.body as { error?: { errors?: { location?: string }[] } }).error?.errors?.[0]
    ?.location;
  if (sent.status !== 400 || location !== body.refusedAt) {
    return `answered ${sent.status} at ${JSON.stringify(location)}, not 400 at ${JSON.stringify(body.refusedAt)}`;
  }
  return undefined;
}

/** Serves `gateway` on a free port for the enclosing describe; sends a body to an operation with `rootKey`. */
/**
 * Sends each body over a real socket with the root key, and a portal session's cookie (`session`),
 * which only the portal's session calls read.
 */
export function over(gateway: Gateway, rootKey: string, session = "pat_fuzz_session") {
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    server = await listen(gateway, 0, "127.0.0.1");
  });
  afterAll(() => server.close());
  return async (operation: Operation, body: FuzzBody): Promise<Sent> => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${rootKey}`,
        cookie: `portal_session=${session}`,
      },
      body: body.raw,
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return {
      label: body.label,
      status: res.status,
      problem: shapeProblem(res.status, parsed),
      raw: body.raw,
      body: parsed,
    };
  };
}

export const shown = (s: Sent) =>
  `${s.label}: ${s.status} ${s.problem ?? ""} ${String(s.raw).slice(0, 200)}${String(s.raw).length > 200 ? "…" : ""}`;

export const samples = <T>(arbitrary: fc.Arbitrary<T>, numRuns: number, seed: number) =>
  fc.sample(arbitrary, { seed, numRuns });
