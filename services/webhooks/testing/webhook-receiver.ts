import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "@latchkey/runtime";
import type { WebhookDeps } from "../src/deps.ts";
import { newSigningSecret } from "../src/secret.ts";
import type { EventRecord } from "../src/store/webhook-store.ts";

/** For the integration tests: real HTTP receivers, webhooks straight into a store, a logger that keeps what it is told. */

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** When the request's body had arrived (Date.now()). */
  at: number;
}

/**
 * A local receiver answering each request with `answer(n, res)` (n counts from 1); it records every
 * request it got. `close` ends it and every connection it holds.
 */
export async function receiver(
  answer: (n: number, res: http.ServerResponse) => void = (_n, res) => res.end(),
) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ headers: req.headers, body, at: Date.now() });
      answer(received.length, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    received,
    port,
    url: `http://127.0.0.1:${port}/hook`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** An answer with this status. */
export const status = (code: number) => (_n: number, res: http.ServerResponse) => {
  res.statusCode = code;
  res.end();
};

/** An answer after `ms`, unless the connection is gone by then. */
export const after =
  (ms: number, code = 200) =>
  (_n: number, res: http.ServerResponse) => {
    setTimeout(() => {
      if (res.destroyed) return;
      res.statusCode = code;
      res.end();
    }, ms);
  };

/** A webhook of `workspaceId` (a new workspace when unset), straight into the store, and its secret. */
export async function webhookTo(
  deps: WebhookDeps,
  url: string,
  options: { workspaceId?: string; events?: string[] } = {},
) {
  const workspaceId = options.workspaceId ?? `ws_${randomUUID()}`;
  const id = `wh_${randomUUID()}`;
  const secret = newSigningSecret();
  const now = deps.clock.now();
  await deps.store.createWebhook(
    {
      id,
      workspaceId,
      url,
      events: options.events ?? ["key.created"],
      description: "",
      enabled: true,
      disabledReason: null,
      sealedSecret: deps.vault.seal(id, workspaceId, secret),
      consecutiveFailures: 0,
      createdAt: now,
      updatedAt: now,
    },
    deps.settings.maxWebhooksPerWorkspace,
  );
  return { id, workspaceId, secret };
}

export const eventIn = (workspaceId: string, over: Partial<EventRecord> = {}): EventRecord => ({
  id: `evt_${randomUUID()}`,
  type: "key.created",
  workspaceId,
  occurredAt: Date.UTC(2026, 10, 26, 9, 0, 0),
  dataJson: '{"keyId":"key_1","apiId":"api_1"}',
  ...over,
});

/** Waits until `check` holds, looking every 20 ms; throws after `withinMs`. */
export async function eventually(check: () => Promise<boolean> | boolean, withinMs = 10_000) {
  const until = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("not within time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A logger that keeps each line (its fields and message) and writes nothing. */
export function keepingLogger(): Logger & { lines: { level: string; msg: string; [k: string]: unknown }[] } {
  const lines: { level: string; msg: string; [k: string]: unknown }[] = [];
  const at =
    (level: string) =>
    (fields: unknown, msg?: string): void => {
      if (typeof fields === "string") lines.push({ level, msg: fields });
      else lines.push({ level, msg: msg ?? "", ...(fields as object) });
    };
  const log = {
    lines,
    level: "info",
    trace: at("trace"),
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    fatal: at("fatal"),
    child: () => log,
  };
  return log as unknown as Logger & { lines: typeof lines };
}

/** The nearest-rank percentile `p` (0 to 100) of `values`. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}
