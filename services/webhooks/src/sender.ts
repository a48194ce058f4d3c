import http from "node:http";
import https from "node:https";
import { blockedAddress, literalAddress, safeLookup } from "./url-safety.ts";

/** Most bytes of a receiver's answer read (docs/limits.md): only its status matters, the rest is dropped. */
export const MAX_RESPONSE_BYTES = 4096;
/** Most characters of an error kept in the delivery log. */
const MAX_ERROR_LENGTH = 500;

export interface AttemptResult {
  /** The receiver's status, or null when none came. */
  statusCode: number | null;
  latencyMs: number;
  /** Why the attempt failed, or null when it succeeded (2xx). */
  error: string | null;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

/**
 * One POST of `body` to `url`: a 2xx is a success, anything else a failure, a 3xx included
 * (redirects are never followed: the Location could point anywhere, a private address too).
 * The host is resolved by safeLookup, which refuses blocked addresses unless `allowPrivate`;
 * a literal address is judged here, since node connects to it without a lookup. The whole
 * attempt, connecting included, is bounded by `timeoutMs`, and at most MAX_RESPONSE_BYTES of the
 * answer are read.
 */
export function send(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<AttemptResult> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (statusCode: number | null, error: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({
        statusCode,
        latencyMs: latency(),
        error: error === null ? null : error.slice(0, MAX_ERROR_LENGTH),
      });
    };
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return finish(null, "the URL is not valid");
    }
    if (!options.allowPrivate) {
      const literal = literalAddress(target);
      const why = literal === undefined ? undefined : blockedAddress(literal);
      if (why) return finish(null, `refused: ${why}; nothing was sent`);
    }
    const client = target.protocol === "https:" ? https : target.protocol === "http:" ? http : undefined;
    if (!client) return finish(null, `refused: ${target.protocol} is not http or https`);
    const req = client.request(target, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "user-agent": "Latchkey-Webhooks",
      },
      ...(options.allowPrivate ? {} : { lookup: safeLookup }),
      // A fresh connection per attempt: a pooled one could have been resolved under other rules.
      agent: false,
    });
    timer = setTimeout(() => {
      req.destroy();
      finish(null, `timed out after ${options.timeoutMs} ms`);
    }, options.timeoutMs);
    req.on("error", (err) => finish(null, err.message || String(err)));
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      const settle = () => {
        res.destroy();
        if (status >= 200 && status < 300) finish(status, null);
        else if (status >= 300 && status < 400)
          finish(status, `answered ${status}: redirects are not followed`);
        else finish(status, `answered ${status}`);
      };
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_RESPONSE_BYTES) settle();
      });
      res.on("end", settle);
      res.on("error", settle);
    });
    req.end(body);
  });
}
