import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "./bundle.ts";

export const k8sRoot = join(repoRoot, "deploy", "k8s");

/** A Kubernetes object as read from YAML; the tests narrow what they look at. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export interface Kustomization {
  /** Path of the kustomization.yaml, relative to deploy/k8s. */
  file: string;
  resources: string[];
  patchFiles: string[];
}

/** Every YAML file under deploy/k8s, relative to it. */
export function yamlFiles(dir = k8sRoot): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry) ? [relative(k8sRoot, path)] : [];
  });
}

/** The documents of one YAML file (relative to deploy/k8s); throws on a syntax error. */
export function readYaml(file: string): unknown[] {
  const docs = parseAllDocuments(readFileSync(join(k8sRoot, file), "utf8"));
  return docs.map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join("; ")}`);
    return doc.toJS() as unknown;
  });
}

export function readKustomization(file: string): Kustomization {
  const [doc] = readYaml(file) as [
    { resources?: string[]; patches?: { path?: string }[]; patchesStrategicMerge?: string[] },
  ];
  return {
    file,
    resources: doc.resources ?? [],
    patchFiles: [
      ...(doc.patches ?? []).flatMap((p) => (p.path === undefined ? [] : [p.path])),
      ...(doc.patchesStrategicMerge ?? []),
    ],
  };
}

/** Where a kustomization's entry points, relative to deploy/k8s; a directory means its kustomization.yaml. */
export function resolveEntry(kustomization: Kustomization, entry: string): string {
  const path = join(k8sRoot, dirname(kustomization.file), entry);
  const target = existsSync(path) && statSync(path).isDirectory() ? join(path, "kustomization.yaml") : path;
  return relative(k8sRoot, target);
}

/** The objects a kustomization lists as resources, following directories, without applying patches. */
export function resourcesOf(kustomizationFile: string): K8sObject[] {
  const kustomization = readKustomization(kustomizationFile);
  return kustomization.resources.flatMap((entry) => {
    const file = resolveEntry(kustomization, entry);
    if (file.endsWith("kustomization.yaml")) return resourcesOf(file);
    return readYaml(file) as K8sObject[];
  });
}

/** True when a kubectl with kustomize built in can be run here. */
export function hasKubectl(): boolean {
  return spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status === 0;
}

/** The objects `kubectl kustomize` renders for a directory under deploy/k8s (patches applied). */
export function render(dir: string): K8sObject[] {
  const out = execFileSync("kubectl", ["kustomize", join(k8sRoot, dir)], { encoding: "utf8" });
  return parseAllDocuments(out).map((doc) => doc.toJS() as K8sObject);
}

/**
 * The objects a kustomization renders, for machines without kubectl: the few
 * kustomize features these overlays use (resources, namespace, images,
 * strategic-merge patches by kind and name including `$patch: delete` and a
 * key set to null, and JSON patches with `replace` on targets by kind, name
 * and label). Anything else
 * throws rather than be rendered wrongly; the manifest test compares the
 * result with `kubectl kustomize` wherever kubectl is installed.
 */
export function renderLocally(dir: string): K8sObject[] {
  const file = join(dir, "kustomization.yaml");
  const k = readYaml(file)[0] as KustomizationDoc;
  const understood = ["apiVersion", "kind", "namespace", "resources", "images", "patches"];
  const unknown = Object.keys(k).filter((key) => !understood.includes(key));
  if (unknown.length > 0) throw new Error(`${file}: renderLocally does not understand ${unknown.join(", ")}`);
  const kustomization = readKustomization(file);

  let objects: K8sObject[] = (k.resources ?? []).flatMap((entry) => {
    const target = resolveEntry(kustomization, entry);
    return target.endsWith("kustomization.yaml")
      ? renderLocally(dirname(target))
      : structuredClone(readYaml(target) as K8sObject[]);
  });

  for (const p of k.patches ?? []) {
    const text = p.patch ?? readFileSync(join(k8sRoot, dir, p.path ?? ""), "utf8");
    const docs = parseAllDocuments(text).map((d) => d.toJS() as unknown);
    if (Array.isArray(docs[0])) {
      const targets = objects.filter((o) => targetMatches(o, p.target ?? {}));
      if (targets.length === 0) throw new Error(`${file}: a JSON patch matches no object`);
      for (const o of targets) for (const op of docs[0] as JsonPatchOp[]) applyJsonPatch(o, op);
      continue;
    }
    for (const patch of docs as K8sObject[]) {
      const i = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
      if (i < 0) throw new Error(`${file}: no ${patch.kind}/${patch.metadata.name} to patch`);
      if ((patch as Record<string, unknown>)["$patch"] === "delete")
        objects = objects.filter((_, j) => j !== i);
      else objects[i] = merge(objects[i], patch) as K8sObject;
    }
  }

  for (const image of k.images ?? []) {
    for (const o of objects as PodOwner[]) {
      for (const c of o.spec?.template?.spec?.containers ?? []) {
        if (c.image === image.name) c.image = `${image.newName ?? image.name}:${image.newTag}`;
      }
    }
  }
  const namespace = k.namespace;
  if (namespace !== undefined) {
    for (const o of objects) if (o.kind !== "Namespace") o.metadata.namespace = namespace;
  }
  return objects;
}

interface PatchTarget {
  kind?: string;
  name?: string;
  labelSelector?: string;
}

interface KustomizationDoc {
  namespace?: string;
  resources?: string[];
  images?: { name: string; newName?: string; newTag: string }[];
  patches?: { path?: string; patch?: string; target?: PatchTarget }[];
}

type PodOwner = K8sObject & { spec?: { template?: { spec?: { containers?: { image: string }[] } } } };

interface JsonPatchOp {
  op: string;
  path: string;
  value: unknown;
}

function targetMatches(o: K8sObject, target: PatchTarget): boolean {
  if (target.kind !== undefined && o.kind !== target.kind) return false;
  if (target.name !== undefined && o.metadata.name !== target.name) return false;
  if (target.labelSelector !== undefined) {
    const m = /^([\w./-]+)=([\w.-]+)$/.exec(target.labelSelector);
    if (!m) throw new Error(`renderLocally does not understand the label selector ${target.labelSelector}`);
    if (o.metadata.labels?.[m[1]!] !== m[2]) return false;
  }
  return true;
}

function applyJsonPatch(o: K8sObject, op: JsonPatchOp): void {
  if (op.op !== "replace") throw new Error(`renderLocally does not understand the JSON patch op ${op.op}`);
  const keys = op.path
    .split("/")
    .slice(1)
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  let node = o as unknown as Record<string, unknown> | undefined;
  for (const key of keys.slice(0, -1)) node = node?.[key] as Record<string, unknown> | undefined;
  const last = keys.at(-1)!;
  if (node === undefined || !(last in node))
    throw new Error(`${o.kind}/${o.metadata.name} has no ${op.path}`);
  node[last] = structuredClone(op.value);
}

/** Strategic merge as far as these patches need it: maps merge, a key set to null goes, everything else is replaced. */
function merge(base: unknown, patch: unknown): unknown {
  if (Array.isArray(patch)) throw new Error("renderLocally does not merge lists");
  if (typeof base !== "object" || base === null || typeof patch !== "object" || patch === null) return patch;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = merge(out[key], value);
  }
  return out;
}
