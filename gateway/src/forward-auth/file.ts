import { readFileSync } from "node:fs";
import { env } from "@latchkey/runtime";
import { parse } from "yaml";
import { PolicyError, PolicySet, type PolicySource, validatePolicySet } from "./policy.ts";

/** Largest policy file read (docs/limits.md). */
export const MAX_POLICY_FILE_BYTES = 1024 * 1024;

/**
 * Policies from a file kept in git (FORWARD_AUTH_POLICIES_FILE, YAML or JSON), for the one
 * workspace FORWARD_AUTH_WORKSPACE_ID names; read once, at start. Any fault stops the start with
 * a message naming the file, the place in it and what to fix.
 */
export function policiesFromFile(path: string, workspaceId: string): PolicySource {
  const set = readPolicyFile(path);
  return { of: (ws) => (ws === workspaceId ? set : PolicySet.empty) };
}

export function readPolicyFile(path: string): PolicySet {
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_POLICY_FILE_BYTES) {
      throw new Error(`it is ${bytes.length} bytes, more than the ${MAX_POLICY_FILE_BYTES} allowed`);
    }
    text = bytes.toString("utf8");
  } catch (err) {
    throw new Error(`FORWARD_AUTH_POLICIES_FILE '${path}' cannot be read: ${(err as Error).message}`);
  }
  return parsePolicies(text, path);
}

/** A policy file's text as a PolicySet; `name` is what errors call it. */
export function parsePolicies(text: string, name: string): PolicySet {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 0 });
  } catch (err) {
    throw new Error(`FORWARD_AUTH_POLICIES_FILE '${name}' is not YAML or JSON: ${(err as Error).message}`);
  }
  const checked = validatePolicySet(doc);
  if (!checked.ok) {
    const lines = checked.violations
      .slice(0, 5)
      .map((v) => `  ${where(v.location)}: ${v.message}${v.fix ? ` (${v.fix})` : ""}`);
    throw new Error(`FORWARD_AUTH_POLICIES_FILE '${name}' is not a valid policy file:\n${lines.join("\n")}`);
  }
  try {
    return PolicySet.from(checked.value);
  } catch (err) {
    if (err instanceof PolicyError) {
      throw new Error(
        `FORWARD_AUTH_POLICIES_FILE '${name}' is not a valid policy file:\n  ${err.location}: ${err.reason}`,
      );
    }
    throw err;
  }
}

/** The validator's locations start at /body, the file's at its root. */
const where = (location: string) => (location.startsWith("/body") ? location.slice(5) || "/" : location);

/**
 * FORWARD_AUTH_POLICIES_FILE and FORWARD_AUTH_WORKSPACE_ID: both or neither; neither gives no
 * policies, so every forward-auth request is refused NO_POLICY.
 */
export function policiesFromEnv(): PolicySource {
  const path = env.string("FORWARD_AUTH_POLICIES_FILE");
  const workspaceId = env.string("FORWARD_AUTH_WORKSPACE_ID");
  if (path === undefined && workspaceId === undefined) return { of: () => PolicySet.empty };
  if (path === undefined || workspaceId === undefined) {
    throw new Error(
      "FORWARD_AUTH_POLICIES_FILE and FORWARD_AUTH_WORKSPACE_ID go together: the file's policies apply to that workspace's proxies",
    );
  }
  return policiesFromFile(path, workspaceId);
}
