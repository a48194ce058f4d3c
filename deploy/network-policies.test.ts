import { describe, expect, it } from "vitest";
import type { K8sObject } from "./k8s-files.ts";
import { admits, type Peer } from "./network-policies.ts";

// The evaluator the manifest tests trust, against the NetworkPolicy API's rules.

const policy = (name: string, spec: unknown): K8sObject =>
  ({ apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name }, spec }) as K8sObject;
const pod = (namespace: string, labels: Record<string, string>): Peer => ({
  kind: "pod",
  namespace: { "kubernetes.io/metadata.name": namespace },
  labels,
});
const target = { namespace: "ns", labels: { app: "db" }, port: 5432 };

describe("admits", () => {
  it("admits anything to a pod that no ingress policy selects", () => {
    const other = policy("other", { podSelector: { matchLabels: { app: "web" } }, policyTypes: ["Ingress"] });
    expect(admits([other], { kind: "outside" }, target)).toBe(true);
  });

  it("admits nothing to a pod selected by a policy without rules", () => {
    const deny = policy("deny", { podSelector: {}, policyTypes: ["Ingress"] });
    expect(admits([deny], pod("ns", { app: "api" }), target)).toBe(false);
  });

  it("reads a podSelector alone as pods of the policy's own namespace", () => {
    const p = policy("p", {
      podSelector: { matchLabels: { app: "db" } },
      policyTypes: ["Ingress"],
      ingress: [{ from: [{ podSelector: { matchLabels: { app: "api" } } }], ports: [{ port: 5432 }] }],
    });
    expect(admits([p], pod("ns", { app: "api" }), target)).toBe(true);
    expect(admits([p], pod("elsewhere", { app: "api" }), target)).toBe(false);
    expect(admits([p], pod("ns", { app: "web" }), target)).toBe(false);
    expect(admits([p], pod("ns", { app: "api" }), { ...target, port: 5433 })).toBe(false);
    expect(admits([p], { kind: "outside" }, target)).toBe(false);
  });

  it("reads a namespaceSelector and a podSelector in one entry as both, and in two entries as either", () => {
    const both = policy("both", {
      podSelector: {},
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
              podSelector: { matchLabels: { app: "prometheus" } },
            },
          ],
        },
      ],
    });
    expect(admits([both], pod("monitoring", { app: "prometheus" }), target)).toBe(true);
    expect(admits([both], pod("monitoring", { app: "grafana" }), target)).toBe(false);
    expect(admits([both], pod("ns", { app: "prometheus" }), target)).toBe(false);

    const either = policy("either", {
      podSelector: {},
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [
            { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } },
            { podSelector: { matchLabels: { app: "prometheus" } } },
          ],
        },
      ],
    });
    expect(admits([either], pod("monitoring", { app: "grafana" }), target)).toBe(true);
    expect(admits([either], pod("ns", { app: "prometheus" }), target)).toBe(true);
    expect(admits([either], pod("default", { app: "prometheus" }), target)).toBe(false);
  });

  it("admits from anywhere on a rule without from, only on its ports", () => {
    const open = policy("open", {
      podSelector: { matchLabels: { app: "db" } },
      policyTypes: ["Ingress"],
      ingress: [{ ports: [{ port: 5432, protocol: "TCP" }] }],
    });
    expect(admits([open], { kind: "outside" }, target)).toBe(true);
    expect(admits([open], pod("default", {}), { ...target, port: 22 })).toBe(false);
  });
});
