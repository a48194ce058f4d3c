import type { K8sObject } from "./k8s-files.ts";

/** Who opens a connection: a pod (its namespace's labels and its own) or a client outside the cluster. */
export type Peer =
  | { kind: "pod"; namespace: Record<string, string>; labels: Record<string, string> }
  | { kind: "outside" };

/** A pod that a connection is made to, in the namespace the policies are applied to. */
export interface Target {
  namespace: string;
  labels: Record<string, string>;
  port: number;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

interface PolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

interface IngressRule {
  from?: PolicyPeer[];
  ports?: { port?: number | string; endPort?: number; protocol?: string }[];
}

interface Policy {
  metadata: { name: string; namespace?: string };
  spec: { podSelector: LabelSelector; policyTypes?: string[]; ingress?: IngressRule[] };
}

/** True when the labels satisfy the selector (an empty selector selects everything). */
export function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const has = e.key in labels;
    const values = e.values ?? [];
    const ok =
      e.operator === "In"
        ? has && values.includes(labels[e.key]!)
        : e.operator === "NotIn"
          ? !has || !values.includes(labels[e.key]!)
          : e.operator === "Exists"
            ? has
            : e.operator === "DoesNotExist"
              ? !has
              : unknownOperator(e.operator);
    if (!ok) return false;
  }
  return true;
}

function unknownOperator(operator: string): never {
  throw new Error(`unknown label selector operator ${operator}`);
}

/** The Ingress policies among `objects` that select the target pod (namespace-less ones count as its namespace's). */
export function guarding(objects: readonly K8sObject[], target: Omit<Target, "port">): Policy[] {
  return (objects as unknown as (K8sObject & Policy)[]).filter(
    (o) =>
      o.kind === "NetworkPolicy" &&
      (o.metadata.namespace ?? target.namespace) === target.namespace &&
      (o.spec.policyTypes ?? ["Ingress"]).includes("Ingress") &&
      selects(o.spec.podSelector, target.labels),
  );
}

/**
 * Whether Kubernetes NetworkPolicies let `peer` open a TCP connection to
 * `target`, by the API's rules: a pod no Ingress policy selects accepts
 * everything; otherwise some rule of a policy selecting it must admit the
 * peer and the port. In one `from` entry a podSelector alone means pods of
 * the policy's namespace, a namespaceSelector alone every pod of the
 * namespaces it selects, and both together pods matching both. Named ports
 * throw: these manifests give numbers.
 */
export function admits(objects: readonly K8sObject[], peer: Peer, target: Target): boolean {
  const policies = guarding(objects, target);
  if (policies.length === 0) return true;
  return policies.some((policy) =>
    (policy.spec.ingress ?? []).some(
      (rule) => portAdmitted(rule, target.port) && peerAdmitted(rule, peer, target.namespace),
    ),
  );
}

function portAdmitted(rule: IngressRule, port: number): boolean {
  if (rule.ports === undefined || rule.ports.length === 0) return true;
  return rule.ports.some((p) => {
    if ((p.protocol ?? "TCP") !== "TCP") return false;
    if (p.port === undefined) return true;
    if (typeof p.port === "string") throw new Error(`named port ${p.port}: not understood here`);
    return p.endPort === undefined ? p.port === port : p.port <= port && port <= p.endPort;
  });
}

function peerAdmitted(rule: IngressRule, peer: Peer, namespace: string): boolean {
  if (rule.from === undefined || rule.from.length === 0) return true;
  return rule.from.some((from) => {
    if (from.ipBlock !== undefined) {
      // Pod-to-pod traffic is matched by selectors; an ipBlock stands for addresses outside the cluster.
      return peer.kind === "outside";
    }
    if (peer.kind === "outside") return false;
    const peerNamespace = peer.namespace["kubernetes.io/metadata.name"];
    const namespaceOk =
      from.namespaceSelector === undefined
        ? peerNamespace === namespace
        : selects(from.namespaceSelector, peer.namespace);
    const podOk = from.podSelector === undefined || selects(from.podSelector, peer.labels);
    return namespaceOk && podOk;
  });
}
