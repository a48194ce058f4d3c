import { Code, type Interceptor } from "@connectrpc/connect";
import { Counter, collectDefaultMetrics, Gauge, Histogram, register } from "prom-client";
import { callErrorOf } from "./errors.ts";
import type { EventSink } from "./event-sink.ts";

/**
 * Prometheus metrics, served at /metrics by every process. One registry per
 * process; the all-in-one process shares it between its services.
 */
export const registry = register;
let defaultsCollected = false;

export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ register: registry });
}

const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** RPCs served, by service, method and Connect code. */
export const rpcDuration = new Histogram({
  name: "latchkey_rpc_duration_seconds",
  help: "Duration of RPCs served, by service, method and outcome code",
  labelNames: ["service", "method", "code"] as const,
  buckets,
});

/** Public operations answered by the gateway, by operation and HTTP status. */
export const httpDuration = new Histogram({
  name: "latchkey_http_request_duration_seconds",
  help: "Duration of public API requests, by operation and HTTP status",
  labelNames: ["operation", "status"] as const,
  buckets,
});

/**
 * The gateway's forward-auth answers (gateway/src/forward-auth), by outcome code (VALID,
 * MISSING_KEY, NO_POLICY, a verification's code) and whether the policy was a dry run, which allows
 * whatever the outcome: what a dry run would have refused is counted here.
 */
export const forwardAuthDecisions = new Counter({
  name: "latchkey_forward_auth_decisions_total",
  help: "Forward-auth decisions by outcome code and dry run",
  labelNames: ["outcome", "dry_run"] as const,
});

/** Verification outcomes: VALID, NOT_FOUND, USAGE_EXCEEDED, ... */
export const verificationOutcomes = new Counter({
  name: "latchkey_verifications_total",
  help: "Key verifications by outcome code",
  labelNames: ["outcome"] as const,
});

/**
 * Records every RPC a Connect router serves, and answers a failure as the caller should see it
 * (callErrorOf: a dependency's passing trouble as UNAVAILABLE), as the unary fast path does.
 */
export const rpcMetricsInterceptor: Interceptor = (next) => async (req) => {
  const end = rpcDuration.startTimer({ service: req.service.typeName, method: req.method.name });
  try {
    const res = await next(req);
    end({ code: "ok" });
    return res;
  } catch (err) {
    const error = callErrorOf(err);
    end({ code: Code[error.code] ?? "unknown" });
    throw error;
  }
};

const sinks = new Set<EventSink>();
const sum = (pick: (s: ReturnType<EventSink["stats"]>) => number) => {
  let total = 0;
  for (const s of sinks) total += pick(s.stats());
  return total;
};
new Gauge({
  name: "latchkey_events_buffered",
  help: "Events waiting in the publisher's buffer",
  collect() {
    this.set(sum((s) => s.buffered));
  },
});
new Gauge({
  name: "latchkey_events_published_total",
  help: "Events published and acknowledged by the stream",
  collect() {
    this.set(sum((s) => s.published));
  },
});
new Gauge({
  name: "latchkey_events_dropped_total",
  help: "Events dropped because the buffer was full (also logged)",
  collect() {
    this.set(sum((s) => s.dropped));
  },
});

/** Reports an event sink's buffer depth, publishes and losses at /metrics. */
export function watchEventSink(sink: EventSink): void {
  sinks.add(sink);
}

export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
