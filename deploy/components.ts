/**
 * Every process Latchkey runs in production: one bundle, one container and
 * one Kubernetes workload each. The build, the manifests and the tests read
 * this table, so a new service is added here first.
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

export type ComponentName = "gateway" | "keys" | "ratelimit" | "identity" | "analytics" | "webhooks";

export const components: readonly Component[] = [
  { name: "gateway", entry: "gateway/src/main.ts", port: 7070, metricsPort: 9464 },
  { name: "keys", entry: "services/keys/src/main.ts", port: 7071 },
  { name: "ratelimit", entry: "services/ratelimit/src/main.ts", port: 7072 },
  { name: "identity", entry: "services/identity/src/main.ts", port: 7073 },
  { name: "analytics", entry: "services/analytics/src/main.ts", port: 7074 },
  { name: "webhooks", entry: "services/webhooks/src/main.ts", port: 7075 },
];
