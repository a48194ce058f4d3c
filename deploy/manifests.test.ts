import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Namespace, Secret, Service } from "kubernetes-models/v1";
import { beforeAll, describe, expect, it } from "vitest";
import { bundle, repoRoot } from "./bundle.ts";
import { type Component, type ComponentName, components } from "./components.ts";
import { type EnvReads, envReads } from "./env-reads.ts";
import {
  hasKubectl,
  type K8sObject,
  k8sRoot,
  readKustomization,
  readYaml,
  render,
  renderLocally,
  resolveEntry,
  resourcesOf,
  yamlFiles,
} from "./k8s-files.ts";
import { admits, guarding, type Peer, selects, type Target } from "./network-policies.ts";

// The manifests against the Kubernetes schemas and against the code: the env
// variables a workload sets are the ones its entrypoint's bundle reads, and its
// ports are the component's port. The overlays are checked as `kubectl
// kustomize` renders them (renderLocally here, compared with kubectl wherever
// kubectl is installed); the base is checked from its files alone.

const models: Record<string, new (data: any) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
};

const PART_OF = "app.kubernetes.io/part-of";
const COMPONENT = "app.kubernetes.io/component";
const kubectl = hasKubectl();
const written = new Set(components.filter((c) => existsSync(join(repoRoot, c.entry))).map((c) => c.name));

const id = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;

function schemaProblems(objects: readonly K8sObject[]): string[] {
  return objects.flatMap((o) => {
    const Model = models[`${o.apiVersion}/${o.kind}`];
    if (Model === undefined) return [`${id(o)}: no schema here for ${o.apiVersion} ${o.kind}`];
    try {
      new Model(o).validate();
      return [];
    } catch (err) {
      return [`${id(o)}: ${(err as Error).message}`];
    }
  });
}

// ---- reading the objects

interface ManifestSet {
  name: string;
  objects: K8sObject[];
  /** The Secrets the workloads read: the set's own, or the base's template when the overlay leaves it out. */
  secrets: K8sObject[];
}

function manifestSet(name: string, objects: K8sObject[]): ManifestSet {
  const own = objects.filter((o) => o.kind === "Secret");
  const template = resourcesOf("base/kustomization.yaml").filter((o) => o.kind === "Secret");
  return { name, objects, secrets: [...own, ...template.filter((t) => !own.some((s) => same(s, t)))] };
}

const same = (a: K8sObject, b: K8sObject) => a.kind === b.kind && a.metadata.name === b.metadata.name;
const isWorkload = (o: K8sObject) => o.kind === "Deployment" || o.kind === "StatefulSet";
const latchkeyWorkloads = (set: ManifestSet) =>
  set.objects.filter((o) => isWorkload(o) && o.metadata.labels?.[PART_OF] === "latchkey") as any[];
const find = (set: ManifestSet, kind: string, name: string) =>
  set.objects.find((o) => o.kind === kind && o.metadata.name === name) as any;
const podLabels = (w: any): Record<string, string> => w.spec.template.metadata.labels ?? {};

function workloadOf(set: ManifestSet, component: Component): any {
  const found = latchkeyWorkloads(set).filter((w) => podLabels(w)[COMPONENT] === component.name);
  expect(found.map(id), `${set.name}: one workload for ${component.name}`).toEqual([
    expect.stringMatching(new RegExp(`/${component.name}$`)),
  ]);
  return found[0];
}

const matches = selects;

/** Every variable a container's environment gets, with its value where the manifests know it. */
function environment(set: ManifestSet, container: any): Map<string, string | undefined> {
  const vars = new Map<string, string | undefined>();
  const dataOf = (kind: string, name: string): Record<string, string> => {
    const pool = kind === "Secret" ? set.secrets : set.objects;
    const o = pool.find((x) => x.kind === kind && x.metadata.name === name) as any;
    if (o === undefined) throw new Error(`${kind}/${name} is referenced but not defined in ${set.name}`);
    return { ...(o.data ?? {}), ...(o.stringData ?? {}) };
  };
  for (const from of container.envFrom ?? []) {
    const data = from.configMapRef
      ? dataOf("ConfigMap", from.configMapRef.name)
      : dataOf("Secret", from.secretRef.name);
    for (const [k, v] of Object.entries(data)) vars.set(`${from.prefix ?? ""}${k}`, v);
  }
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.configMapKeyRef ?? e.valueFrom?.secretKeyRef;
    if (ref) {
      const data = dataOf(e.valueFrom.configMapKeyRef ? "ConfigMap" : "Secret", ref.name);
      if (!(ref.key in data)) throw new Error(`${e.name}: ${ref.name} has no key ${ref.key} in ${set.name}`);
      vars.set(e.name, data[ref.key]);
    } else {
      vars.set(e.name, e.value);
    }
  }
  return vars;
}

/** Names used only to build other values, as in `http://$(POD_NAME).ratelimit-peers:7072`. */
function expansionOnly(vars: Map<string, string | undefined>): Set<string> {
  const used = new Set<string>();
  for (const v of vars.values())
    for (const [, name] of (v ?? "").matchAll(/\$\(([A-Z0-9_]+)\)/g)) used.add(name!);
  return used;
}

function resolvePort(container: any, port: number | string): number | undefined {
  if (typeof port === "number") return port;
  return container.ports?.find((p: any) => p.name === port)?.containerPort;
}

// ---- the sets checked

const base = manifestSet("base", resourcesOf("base/kustomization.yaml"));
const overlayDirs = ["overlays/dev", "overlays/prod", "overlays/redis"];
const overlays = overlayDirs.map((dir) => manifestSet(dir, renderLocally(dir)));

const reads = new Map<string, EnvReads>();
beforeAll(async () => {
  for (const c of components) {
    if (written.has(c.name)) reads.set(c.name, envReads(repoRoot, (await bundle(c)).sources));
  }
}, 60_000);

describe("the YAML files under deploy/k8s", () => {
  it.each(yamlFiles())("%s parses", (file) => {
    expect(readYaml(file).length).toBeGreaterThan(0);
  });

  it("name only files that exist in their kustomizations", () => {
    const kustomizations = yamlFiles().filter((f) => f.endsWith("kustomization.yaml"));
    expect(kustomizations.sort()).toEqual([
      "base/kustomization.yaml",
      "deps/kustomization.yaml",
      "overlays/dev/kustomization.yaml",
      "overlays/prod/kustomization.yaml",
      "overlays/redis/kustomization.yaml",
    ]);
    const missing = kustomizations.flatMap((file) => {
      const k = readKustomization(file);
      return [...k.resources, ...k.patchFiles]
        .map((entry) => resolveEntry(k, entry))
        .filter((target) => !existsSync(join(k8sRoot, target)))
        .map((target) => `${file} -> ${target}`);
    });
    expect(missing).toEqual([]);
  });

  it("are each used by a kustomization, as a resource or a patch", () => {
    const used = new Set<string>();
    for (const file of yamlFiles().filter((f) => f.endsWith("kustomization.yaml"))) {
      used.add(file);
      const k = readKustomization(file);
      for (const entry of [...k.resources, ...k.patchFiles]) used.add(resolveEntry(k, entry));
    }
    expect(yamlFiles().filter((f) => !used.has(f))).toEqual([]);
  });

  it("hold objects that the Kubernetes schemas accept (base and deps, as written)", () => {
    const objects = [...resourcesOf("base/kustomization.yaml"), ...resourcesOf("deps/kustomization.yaml")];
    expect(objects.length).toBeGreaterThan(20);
    expect(schemaProblems(objects)).toEqual([]);
  });

  it("are checked by a schema validation that rejects a port given as a string", () => {
    const keys = structuredClone(find(base, "Deployment", "keys"));
    keys.spec.template.spec.containers[0].ports[0].containerPort = "7071";
    expect(schemaProblems([keys])).toEqual([expect.stringContaining("containerPort must be integer")]);
  });
});

describe("docs/configuration.md", () => {
  const readme = readFileSync(join(repoRoot, "docs", "configuration.md"), "utf8");

  it.each(components.map((c) => [c.name, c] as const))(
    "lists every variable %s reads, with the default its code gives",
    (name, component) => {
      const section = readme.split(/^### /m).find((s) => s.startsWith(`${name}\n`));
      expect(section, `a section "### ${name}"`).toBeDefined();
      const rows = new Map(
        [...section!.matchAll(/^\|\s*`([A-Z0-9_]+)`\s*\|\s*([^|]+?)\s*\|/gm)].map((m) => [m[1]!, m[2]!]),
      );
      if (!written.has(name)) return; // documented ahead of its entrypoint
      const code = reads.get(name)!;
      const expected = new Map(
        [...code.read].map((v) => {
          const fallback = code.defaults.get(v);
          const cell = code.required.has(v)
            ? "required"
            : fallback
              ? `\`${[...fallback].join(", ")}\``
              : "none";
          return [v, cell] as const;
        }),
      );
      expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(expected));
      expect(code.defaults.get("PORT"), "the code's default port").toEqual(new Set([String(component.port)]));
    },
  );
});

describe("the overlays, rendered", () => {
  const byId = (objects: K8sObject[]) =>
    Object.fromEntries(objects.map((o) => [`${o.apiVersion}/${o.kind}/${o.metadata.name}`, o]));

  it.skipIf(!kubectl).each(overlayDirs)("%s renders here exactly as kubectl kustomize renders it", (dir) => {
    expect(byId(renderLocally(dir))).toEqual(byId(render(dir)));
  });

  it.each(overlays.map((s) => [s.name, s] as const))("%s passes the Kubernetes schemas", (_, set) => {
    expect(schemaProblems(set.objects)).toEqual([]);
  });

  it("dev runs one replica of every Latchkey workload, beside PostgreSQL, NATS and ClickHouse", () => {
    const dev = overlays.find((s) => s.name === "overlays/dev")!;
    for (const w of latchkeyWorkloads(dev)) {
      if (w.kind === "StatefulSet") expect(w.spec.replicas, id(w)).toBe(1);
      else expect(hpaFor(dev, w)?.spec.maxReplicas, id(w)).toBe(1);
    }
    for (const dep of ["postgres", "nats", "clickhouse"]) {
      expect(find(dev, "StatefulSet", dep)?.spec.replicas, dep).toBe(1);
      expect(find(dev, "Service", dep), dep).toBeDefined();
    }
    expect(find(dev, "Secret", "latchkey").stringData.DATABASE_URL).toMatch(/^postgres:\/\//);
  });

  it("dev gives keys an encryption key of 32 bytes, without which keys exits at start", () => {
    const dev = overlays.find((s) => s.name === "overlays/dev")!;
    const keys = workloadOf(dev, components.find((c) => c.name === "keys")!);
    const key = environment(dev, keys.spec.template.spec.containers[0]).get("LATCHKEY_ENCRYPTION_KEY");
    expect(Buffer.from(key ?? "", "base64")).toHaveLength(32);
  });

  it("dev gives every process one internal secret long enough to start with", () => {
    const dev = overlays.find((s) => s.name === "overlays/dev")!;
    const values = new Set(
      components.map((c) =>
        environment(dev, workloadOf(dev, c).spec.template.spec.containers[0]).get("LATCHKEY_INTERNAL_SECRET"),
      ),
    );
    expect(values.size).toBe(1);
    // The shortest the processes accept (MIN_SECRET_LENGTH, packages/runtime/src/internal-auth.ts).
    expect([...values][0]!.length).toBeGreaterThanOrEqual(32);
  });

  it("prod runs at least two replicas of everything, with more room than the base, and leaves the Secret alone", () => {
    const prod = overlays.find((s) => s.name === "overlays/prod")!;
    expect(find(prod, "Secret", "latchkey")).toBeUndefined();
    expect(prod.objects.filter((o) => o.metadata.labels?.[PART_OF] === "latchkey-deps")).toEqual([]);
    for (const w of latchkeyWorkloads(prod)) {
      if (w.kind === "StatefulSet") expect(w.spec.replicas, id(w)).toBeGreaterThanOrEqual(2);
      else expect(hpaFor(prod, w)?.spec.minReplicas, id(w)).toBeGreaterThanOrEqual(2);
      const baseline = find(base, w.kind, w.metadata.name).spec.template.spec.containers[0].resources;
      const resources = w.spec.template.spec.containers[0].resources;
      expect(mebibytes(resources.limits.memory), id(w)).toBeGreaterThan(mebibytes(baseline.limits.memory));
    }
  });
});

describe("the redis overlay, rendered", () => {
  const redis = overlays.find((s) => s.name === "overlays/redis")!;
  const prod = overlays.find((s) => s.name === "overlays/prod")!;
  const ratelimit = () => workloadOf(redis, components.find((c) => c.name === "ratelimit")!);

  it("runs ratelimit as a Deployment that an autoscaler scales from two replicas, with no peer list or headless Service", () => {
    const w = ratelimit();
    expect(w.kind).toBe("Deployment");
    expect(hpaFor(redis, w)?.spec).toMatchObject({ minReplicas: 2, maxReplicas: 10 });
    expect(find(redis, "StatefulSet", "ratelimit")).toBeUndefined();
    expect(find(redis, "Service", "ratelimit-peers")).toBeUndefined();
    expect(find(redis, "ConfigMap", "ratelimit").data).toEqual({
      PORT: "7072",
      LOG_LEVEL: "info",
      RATELIMIT_STORE: "redis",
      REDIS_URL: "redis://valkey:6379",
    });
  });

  it("is prod otherwise: the same objects but ratelimit's, the Secret left alone, the same room per container", () => {
    const ids = (set: ManifestSet) =>
      set.objects
        .filter(
          (o) =>
            o.metadata.labels?.[COMPONENT] !== "ratelimit" &&
            o.metadata.labels?.[PART_OF] !== "latchkey-store",
        )
        .map(id)
        .sort();
    expect(ids(redis)).toEqual(ids(prod));
    expect(find(redis, "Secret", "latchkey")).toBeUndefined();
    const room = (w: any) => w.spec.template.spec.containers[0].resources;
    expect(room(ratelimit())).toEqual(room(find(prod, "Deployment", "keys")));
  });

  it("runs one Valkey with an append-only file that refuses writes rather than evict counters when full", () => {
    const valkey = find(redis, "StatefulSet", "valkey");
    expect(valkey.spec.replicas).toBe(1);
    const args: string[] = valkey.spec.template.spec.containers[0].args;
    const flag = (name: string) => args[args.indexOf(name) + 1];
    expect([flag("--appendonly"), flag("--maxmemory-policy")]).toEqual(["yes", "noeviction"]);
    expect(valkey.spec.template.spec.containers[0].ports[0].containerPort).toBe(6379);
    expect(find(redis, "Service", "valkey").spec.ports[0].port).toBe(6379);
  });

  it("lets ratelimit, and no other pod, reach Valkey", () => {
    const valkey = find(redis, "StatefulSet", "valkey");
    const to = { namespace: "latchkey", labels: podLabels(valkey), port: 6379 };
    const from = (name: ComponentName): Peer => ({
      kind: "pod",
      namespace: { "kubernetes.io/metadata.name": "latchkey" },
      labels: podLabels(workloadOf(redis, components.find((c) => c.name === name)!)),
    });
    expect(
      Object.fromEntries(components.map((c) => [c.name, admits(redis.objects, from(c.name), to)])),
    ).toEqual({
      gateway: false,
      keys: false,
      ratelimit: true,
      identity: false,
      analytics: false,
      webhooks: false,
      portal: false,
    });
    expect(admits(redis.objects, { kind: "outside" }, to)).toBe(false);
  });
});

function hpaFor(set: ManifestSet, w: any): any {
  return set.objects.find(
    (o: any) =>
      o.kind === "HorizontalPodAutoscaler" &&
      o.spec.scaleTargetRef.kind === w.kind &&
      o.spec.scaleTargetRef.name === w.metadata.name,
  );
}

function mebibytes(quantity: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`unexpected memory quantity ${quantity}`);
  return Number(m[1]) * (m[2] === "Gi" ? 1024 : 1);
}

describe.each([base, ...overlays].map((s) => [s.name, s] as const))("%s", (_, set) => {
  describe.each(components.map((c) => [c.name, c] as const))("%s", (name, component) => {
    it.skipIf(!written.has(name))(
      "sets only env variables its code reads, every one it requires and every URL it reads",
      () => {
        const w = workloadOf(set, component);
        const vars = environment(set, w.spec.template.spec.containers[0]);
        const code = reads.get(name)!;
        const helpers = expansionOnly(vars);
        const unread = [...vars.keys()].filter((v) => !code.read.has(v) && !helpers.has(v));
        // A URL's default points at localhost, which is never right in a cluster. REDIS_URL is read
        // only with RATELIMIT_STORE=redis, and needed only then.
        const redis = vars.get("RATELIMIT_STORE") === "redis";
        const needed = [...code.read].filter(
          (v) => code.required.has(v) || (v.endsWith("_URL") && (v !== "REDIS_URL" || redis)),
        );
        const unset = needed.filter((v) => !vars.has(v));
        expect({ unread, unset }).toEqual({ unread: [], unset: [] });
      },
    );

    it.skipIf(!written.has(name))(
      "takes LATCHKEY_INTERNAL_SECRET, which its code requires, from the Secret latchkey and from nowhere else",
      () => {
        expect(reads.get(name)!.required.has("LATCHKEY_INTERNAL_SECRET"), "read with env.required").toBe(
          true,
        );
        const container = workloadOf(set, component).spec.template.spec.containers[0];
        const entries = (container.env ?? []).filter((e: any) => e.name === "LATCHKEY_INTERNAL_SECRET");
        expect(entries).toEqual([
          {
            name: "LATCHKEY_INTERNAL_SECRET",
            valueFrom: { secretKeyRef: { name: "latchkey", key: "LATCHKEY_INTERNAL_SECRET" } },
          },
        ]);
        for (const from of container.envFrom ?? []) {
          const source = from.configMapRef ?? from.secretRef;
          const o = [...set.objects, ...set.secrets].find((x: any) => x.metadata.name === source.name) as any;
          expect(Object.keys({ ...o?.data, ...o?.stringData }), `envFrom ${source.name}`).not.toContain(
            "LATCHKEY_INTERNAL_SECRET",
          );
        }
      },
    );

    it("runs its own bundle and listens, is probed and is served on its port", () => {
      const w = workloadOf(set, component);
      const container = w.spec.template.spec.containers[0];
      expect(w.spec.template.spec.containers).toHaveLength(1);
      expect(container.args).toEqual([`dist/${name}.mjs`]);
      expect(environment(set, container).get("PORT")).toBe(String(component.port));
      const metricsPorts = component.metricsPort === undefined ? [] : [component.metricsPort];
      expect(container.ports.map((p: any) => p.containerPort)).toEqual([component.port, ...metricsPorts]);
      if (component.metricsPort !== undefined) {
        expect(environment(set, container).get("METRICS_PORT")).toBe(String(component.metricsPort));
      }
      expect(container.livenessProbe.httpGet.path).toBe("/healthz");
      expect(container.startupProbe.httpGet.path).toBe("/healthz");
      expect(container.readinessProbe.httpGet.path).toBe("/readyz");
      for (const probe of [container.livenessProbe, container.startupProbe, container.readinessProbe]) {
        expect(resolvePort(container, probe.httpGet.port)).toBe(component.port);
      }
      const services = set.objects.filter(
        (o: any) => o.kind === "Service" && matches({ matchLabels: o.spec.selector }, podLabels(w)),
      ) as any[];
      expect(services.map((s) => s.metadata.name)).toContain(name);
      for (const s of services) {
        for (const p of s.spec.ports)
          expect(resolvePort(container, p.targetPort), id(s)).toBe(component.port);
      }
    });

    it("asks Prometheus to scrape /metrics on its metrics port, from every replica", () => {
      const w = workloadOf(set, component);
      const port = component.metricsPort ?? component.port;
      expect(w.spec.template.metadata.annotations).toEqual({
        "prometheus.io/scrape": "true",
        "prometheus.io/port": String(port),
        "prometheus.io/path": "/metrics",
      });
      expect(w.spec.template.spec.containers[0].ports.map((p: any) => p.containerPort)).toContain(port);
    });

    it("runs as non-root on a read-only root filesystem, with requests and limits", () => {
      const w = workloadOf(set, component);
      const pod = w.spec.template.spec;
      const container = pod.containers[0];
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(container.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      });
      for (const kind of ["requests", "limits"]) {
        expect(Object.keys(container.resources[kind]).sort(), kind).toEqual(["cpu", "memory"]);
      }
    });

    it("has a PodDisruptionBudget, and an autoscaler that owns the count when it is stateless", () => {
      const w = workloadOf(set, component);
      const pdbs = set.objects.filter(
        (o: any) => o.kind === "PodDisruptionBudget" && matches(o.spec.selector, podLabels(w)),
      );
      expect(pdbs).toHaveLength(1);
      if (w.kind === "Deployment") {
        expect(hpaFor(set, w), "autoscaler").toBeDefined();
        expect(w.spec.replicas, "replicas left to the autoscaler").toBeUndefined();
      } else {
        expect(hpaFor(set, w), "a StatefulSet's peer list is fixed: no autoscaler").toBeUndefined();
      }
    });
  });

  it("gives ratelimit a peer list naming each of its replicas once, itself among them, or Redis and no peers", () => {
    const sts = workloadOf(set, components.find((c) => c.name === "ratelimit")!);
    if (sts.kind === "Deployment") {
      const vars = environment(set, sts.spec.template.spec.containers[0]);
      expect(vars.get("RATELIMIT_STORE")).toBe("redis");
      expect(vars.get("REDIS_URL")).toMatch(/^rediss?:\/\//);
      expect([...vars.keys()].filter((v) => v === "RATELIMIT_PEERS" || v === "RATELIMIT_SELF")).toEqual([]);
      return;
    }
    const vars = environment(set, sts.spec.template.spec.containers[0]);
    const peers = vars.get("RATELIMIT_PEERS")!.split(",");
    const pods = Array.from({ length: sts.spec.replicas }, (_, i) => `${sts.metadata.name}-${i}`);
    expect(peers).toEqual(pods.map((pod) => `http://${pod}.${sts.spec.serviceName}:7072`));
    expect(vars.get("RATELIMIT_SELF")).toBe(`http://$(POD_NAME).${sts.spec.serviceName}:7072`);
    expect(sts.spec.template.spec.containers[0].env[0]).toEqual({
      name: "POD_NAME",
      valueFrom: { fieldRef: { fieldPath: "metadata.name" } },
    });
  });

  it("selects an existing workload's pods with every Service", () => {
    const workloads = set.objects.filter(isWorkload) as any[];
    const orphans = set.objects
      .filter((o: any) => o.kind === "Service")
      .filter(
        (s: any) =>
          Object.keys(s.spec.selector ?? {}).length === 0 ||
          !workloads.some((w) => matches({ matchLabels: s.spec.selector }, podLabels(w))),
      );
    expect(orphans.map(id)).toEqual([]);
  });

  it("points every URL a workload is given at a Service and port that exist", () => {
    const problems: string[] = [];
    for (const w of latchkeyWorkloads(set)) {
      for (const [name, value] of environment(set, w.spec.template.spec.containers[0])) {
        for (const url of (value ?? "").split(",")) {
          const m = /^[a-z]+:\/\/(?:[^@/]*@)?([^:/@]+):(\d+)/.exec(url.trim());
          if (!m || url.includes("$(")) continue;
          const problem = serviceProblem(set, m[1]!, Number(m[2]));
          if (problem) problems.push(`${id(w)} ${name}=${url}: ${problem}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  describe("network policies", () => {
    const NS = "latchkey";
    const byName = (name: ComponentName) => components.find((c) => c.name === name)!;
    const inNamespace = (namespace: string, labels: Record<string, string>): Peer => ({
      kind: "pod",
      namespace: { "kubernetes.io/metadata.name": namespace },
      labels,
    });
    const podOf = (name: ComponentName) => inNamespace(NS, podLabels(workloadOf(set, byName(name))));
    const to = (name: ComponentName, port = byName(name).port): Target => ({
      namespace: NS,
      labels: podLabels(workloadOf(set, byName(name))),
      port,
    });
    /** For each component, whether `peer` may open a connection to its port. */
    const reach = (peer: Peer) =>
      Object.fromEntries(components.map((c) => [c.name, admits(set.objects, peer, to(c.name))]));
    const prometheus = { "app.kubernetes.io/name": "prometheus" };

    it("guard every Latchkey pod with an ingress policy", () => {
      const unguarded = latchkeyWorkloads(set).filter(
        (w) => guarding(set.objects, { namespace: NS, labels: podLabels(w) }).length === 0,
      );
      expect(unguarded.map(id)).toEqual([]);
    });

    it("let clients outside the cluster reach the gateway's port and no service's", () => {
      expect(reach({ kind: "outside" })).toEqual({
        gateway: true,
        keys: false,
        ratelimit: false,
        identity: false,
        analytics: false,
        webhooks: false,
        portal: false,
      });
      expect(admits(set.objects, { kind: "outside" }, to("gateway", 7071)), "another port").toBe(false);
      expect(admits(set.objects, { kind: "outside" }, to("gateway", 9464)), "the metrics port").toBe(false);
    });

    it("let keys reach ratelimit on 7072 and identity on 7073, which it calls while verifying", () => {
      expect(admits(set.objects, podOf("keys"), to("ratelimit", 7072)), "keys -> ratelimit").toBe(true);
      expect(admits(set.objects, podOf("keys"), to("identity", 7073)), "keys -> identity").toBe(true);
    });

    it("let each service be called only by the components that call it", () => {
      const callers = Object.fromEntries(
        components
          .filter((c) => c.name !== "gateway")
          .map((target) => [
            target.name,
            components.filter((c) => admits(set.objects, podOf(c.name), to(target.name))).map((c) => c.name),
          ]),
      );
      // Ratelimit replicas call each other only in the peer mode (a StatefulSet).
      const peers = workloadOf(set, byName("ratelimit")).kind === "StatefulSet";
      expect(callers).toEqual({
        keys: ["gateway", "portal"],
        ratelimit: peers ? ["gateway", "keys", "ratelimit"] : ["gateway", "keys"],
        identity: ["gateway", "keys"],
        analytics: ["gateway", "portal"],
        webhooks: ["gateway"],
        portal: ["gateway"],
      });
    });

    it("admit every call a workload is configured to make (each in-cluster URL it is given)", () => {
      const edges: string[] = [];
      const refused: string[] = [];
      for (const w of latchkeyWorkloads(set)) {
        const from = inNamespace(NS, podLabels(w));
        for (const [name, value] of environment(set, w.spec.template.spec.containers[0])) {
          for (const url of (value ?? "").split(",")) {
            const m = /^[a-z]+:\/\/(?:[^@/]*@)?([^:/@]+):(\d+)/.exec(url.trim());
            if (!m || url.includes("$(") || m[1]!.split(".").length > 2) continue;
            const service = find(set, "Service", m[1]!.split(".").at(-1)!);
            const port = service?.spec.ports.find((p: any) => p.port === Number(m[2]));
            const target = latchkeyWorkloads(set).find((t) =>
              matches({ matchLabels: service?.spec.selector }, podLabels(t)),
            );
            if (!port || !target) continue; // a dependency, or a URL the URL test reports
            const targetPort = resolvePort(target.spec.template.spec.containers[0], port.targetPort)!;
            const edge = `${w.metadata.name} -> ${target.metadata.name}:${targetPort} (${name})`;
            edges.push(edge);
            if (!admits(set.objects, from, { namespace: NS, labels: podLabels(target), port: targetPort }))
              refused.push(edge);
          }
        }
      }
      expect(edges).toEqual(
        expect.arrayContaining([
          "keys -> ratelimit:7072 (RATELIMIT_URL)",
          "keys -> identity:7073 (IDENTITY_URL)",
          "gateway -> keys:7071 (KEYS_URL)",
        ]),
      );
      expect(refused).toEqual([]);
    });

    it("let the monitoring namespace's Prometheus scrape every component's port, and no other pod there or elsewhere", () => {
      expect(reach(inNamespace("monitoring", prometheus))).toEqual({
        gateway: true,
        keys: true,
        ratelimit: true,
        identity: true,
        analytics: true,
        webhooks: true,
        portal: true,
      });
      const closed = {
        gateway: true,
        keys: false,
        ratelimit: false,
        identity: false,
        analytics: false,
        webhooks: false,
        portal: false,
      };
      expect(reach(inNamespace("monitoring", { "app.kubernetes.io/name": "grafana" })), "grafana").toEqual(
        closed,
      );
      expect(reach(inNamespace("default", prometheus)), "a Prometheus in another namespace").toEqual(closed);
      const gatewayMetrics = to("gateway", byName("gateway").metricsPort);
      expect(admits(set.objects, inNamespace("monitoring", prometheus), gatewayMetrics)).toBe(true);
      expect(
        admits(
          set.objects,
          inNamespace("monitoring", { "app.kubernetes.io/name": "grafana" }),
          gatewayMetrics,
        ),
      ).toBe(false);
    });
  });
});

/** Why host:port names no Service of the set, if it does not (hosts with a domain are outside and not checked). */
function serviceProblem(set: ManifestSet, host: string, port: number): string | undefined {
  const parts = host.split(".");
  if (parts.length > 2) return undefined;
  const service = find(set, "Service", parts.at(-1)!);
  if (service === undefined) return `no Service ${parts.at(-1)}`;
  if (!service.spec.ports.some((p: any) => p.port === port)) return `Service ${host} has no port ${port}`;
  if (parts.length === 2) {
    // <statefulset>-<ordinal>.<headless service>: a pod that exists
    const sts = set.objects.find(
      (o: any) => o.kind === "StatefulSet" && o.spec.serviceName === parts[1],
    ) as any;
    const m = /^(.*)-(\d+)$/.exec(parts[0]!);
    if (service.spec.clusterIP !== "None") return `Service ${parts[1]} is not headless`;
    if (!sts || !m || m[1] !== sts.metadata.name || Number(m[2]) >= (sts.spec.replicas ?? 1)) {
      return `no pod ${parts[0]} behind ${parts[1]}`;
    }
  }
  return undefined;
}
