import type { AuditResource } from "@latchkey/runtime";

// What the keys context's audit records name; the helpers every audited context shares (audited,
// succeeded) are in packages/runtime/src/audit.ts.
export const apiResource = (id: string): AuditResource => ({ type: "api", id });
export const keyResource = (id: string): AuditResource => ({ type: "key", id });
