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
