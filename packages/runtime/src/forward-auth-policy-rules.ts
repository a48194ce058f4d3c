/**
 * The rules a forward-auth policy must keep beyond its JSON Schema, in one place: the gateway's
 * policy file loader (gateway/src/forward-auth/policy.ts) and the keys service's policy operations
 * both apply them, so a policy the file refuses is refused through the API at the same place.
 */
export interface PolicyRuleSubject {
  key?: { from: string; name?: string | undefined } | undefined;
  stripKey?: boolean | undefined;
  hosts?: unknown;
  paths?: unknown;
  methods?: unknown;
}

/** Where (under `at`) and why a policy breaks a rule; undefined when it keeps them all. */
export function policyRuleViolation(
  p: PolicyRuleSubject,
  at: string,
  isDefault = false,
): { location: string; reason: string } | undefined {
  if (isDefault) {
    for (const field of ["hosts", "paths", "methods"] as const) {
      if (p[field] !== undefined) {
        return {
          location: `${at}/${field}`,
          reason: `a default policy matches what no other does: remove ${field}`,
        };
      }
    }
  }
  const key = p.key;
  if (key && key.from !== "bearer" && key.name === undefined) {
    return {
      location: `${at}/key/name`,
      reason: `a key read from a ${key.from} needs the ${key.from}'s name`,
    };
  }
  if (key && key.from === "bearer" && key.name !== undefined) {
    return { location: `${at}/key/name`, reason: "a bearer key is read from Authorization: remove name" };
  }
  if (p.stripKey && key && key.from !== "bearer" && key.from !== "header") {
    return {
      location: `${at}/stripKey`,
      reason: `a key in a ${key.from} cannot be stripped by the proxy's configuration: move it to a header or remove stripKey`,
    };
  }
  return undefined;
}
