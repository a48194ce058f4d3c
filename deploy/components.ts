import {
  CONTEXT_NAMES,
  CONTEXTS,
  type ContextName,
  GATEWAY_PROCESS,
} from "../packages/runtime/src/contexts.ts";

/**
 * Every process Latchkey runs in production: one bundle, one container and
 * one Kubernetes workload each. The build, the manifests and the tests read
 * this table, which is the gateway and the contexts of
 * packages/runtime/src/contexts.ts: a new context is added there.
 */
export interface Component {
  /** The bundle is dist/<name>.mjs; the workload, its Service and its labels use the same name. */
  name: ComponentName;
  /** Entrypoint, relative to the repository root. */
  entry: string;
  /** The port the process listens on (its PORT), for RPC, /healthz and /readyz alike. */
  port: number;
  /** Where Prometheus scrapes /metrics (its METRICS_PORT) when not `port`: the gateway's public port has none. */
  metricsPort?: number;
}

export type ComponentName = "gateway" | ContextName;

export const components: readonly Component[] = [
  { ...GATEWAY_PROCESS },
  ...CONTEXT_NAMES.map((name) => ({ name, entry: CONTEXTS[name].entry, port: CONTEXTS[name].port })),
];
