import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { IDENTITY_AUDIT_TABLE } from "@latchkey/identity";
import { KEYS_AUDIT_TABLE } from "@latchkey/keys";
import { PORTAL_AUDIT_TABLE } from "@latchkey/portal";
import { RATELIMIT_AUDIT_TABLE } from "@latchkey/ratelimit";
import { CONTEXT_NAMES, CONTEXTS, type ContextName, contextSettings, startOrder } from "@latchkey/runtime";
import { WEBHOOKS_AUDIT_TABLE } from "@latchkey/webhooks";
import { describe, expect, it } from "vitest";

// packages/runtime/src/contexts.ts is the one list of the contexts: what it says of each must be
// what the context's own code does.

const root = join(import.meta.dirname, "..", "..");

describe("the list of contexts", () => {
  it("names each context's audit table as its store writes it", () => {
    const written: Record<ContextName, string | undefined> = {
      keys: KEYS_AUDIT_TABLE,
      ratelimit: RATELIMIT_AUDIT_TABLE,
      identity: IDENTITY_AUDIT_TABLE,
      analytics: undefined,
      webhooks: WEBHOOKS_AUDIT_TABLE,
      portal: PORTAL_AUDIT_TABLE,
    };
    expect(Object.fromEntries(CONTEXT_NAMES.map((n) => [n, CONTEXTS[n].auditTable]))).toEqual(written);
  });

  it("names entry points that run the context they are listed for", () => {
    for (const name of CONTEXT_NAMES) {
      const entry = join(root, CONTEXTS[name].entry);
      expect(existsSync(entry), entry).toBe(true);
      expect(readFileSync(entry, "utf8"), entry).toContain(`runService("${name}", {`);
    }
  });

  it("gives every context a port and a URL setting of its own", () => {
    const ports = CONTEXT_NAMES.map((n) => CONTEXTS[n].port);
    const settings = CONTEXT_NAMES.map((n) => CONTEXTS[n].urlSetting);
    expect(new Set(ports).size).toBe(CONTEXT_NAMES.length);
    expect(new Set(settings).size).toBe(CONTEXT_NAMES.length);
    expect(ports).not.toContain(7070);
  });

  it("starts each context after the ones it calls, every one once", () => {
    const order = startOrder();
    expect([...order].sort()).toEqual([...CONTEXT_NAMES].sort());
    for (const name of CONTEXT_NAMES) {
      for (const callee of CONTEXTS[name].calls)
        expect(order.indexOf(callee)).toBeLessThan(order.indexOf(name));
    }
  });

  it("has runService read the port, stores and callees' URLs its row says, with their defaults", () => {
    expect(contextSettings("keys")).toEqual([
      { name: "PORT", kind: "int", fallback: 7071 },
      { name: "DATABASE_URL", kind: "string", required: true },
      { name: "AUDIT_RETENTION_DAYS", kind: "int", fallback: 365, min: 1 },
      { name: "NATS_URL", kind: "string", required: false },
      { name: "RATELIMIT_URL", kind: "string", fallback: "http://127.0.0.1:7072" },
      { name: "IDENTITY_URL", kind: "string", fallback: "http://127.0.0.1:7073" },
    ]);
    expect(contextSettings("analytics")).toEqual([
      { name: "PORT", kind: "int", fallback: 7074 },
      { name: "NATS_URL", kind: "string", required: true },
    ]);
  });
});
