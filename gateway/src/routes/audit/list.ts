import type { AuditLog } from "@latchkey/proto/audit/v1/audit_pb";
import { encodeAuditCursor, newestFirst } from "@latchkey/runtime";
import { Type } from "@sinclair/typebox";
import { AUDIT_CONTEXTS, route } from "../../route.ts";
import { Closed, Enum, Int, Str } from "../../schema.ts";

const Millis = Type.Integer({ minimum: 0, examples: [1_767_225_600_000] });

/** One management change, or one the service refused: ids and field names, never values. */
export const AuditLogEntry = Closed({
  auditLogId: Type.String({ examples: ["audit_2cGKbMxRjIzhCxo1IdjH3a"] }),
  time: Millis,
  actor: Closed({
    type: Enum(["root_key", "cli", "system", "portal_session"] as const),
    id: Type.String({ examples: ["rk_2cGKbMxRjIzhCxo1IdjH3a"] }),
  }),
  operation: Type.String({ examples: ["keys.createKey"] }),
  resources: Type.Array(
    Closed({
      type: Type.String({ examples: ["key"] }),
      id: Type.String({ examples: ["key_2cGKbMxRjIzhCxo1IdjH3a"] }),
    }),
  ),
  outcome: Enum(["success", "failure"] as const),
  error: Type.Union([Closed({ code: Type.String({ examples: ["KEY_NOT_FOUND"] }) }), Type.Null()]),
  requestId: Type.String({ examples: ["req_2cGKbMxRjIzhCxo1IdjH3a"] }),
  fields: Type.Array(Type.String({ examples: ["name"] })),
});

const schema = Closed({
  limit: Type.Optional(Int({ minimum: 1, maximum: 100 })),
  cursor: Type.Optional(Str(1, 1024)),
  actorId: Type.Optional(Str(1, 255)),
  resourceId: Type.Optional(Str(1, 255)),
  operation: Type.Optional(Str(1, 255)),
  outcome: Type.Optional(Enum(["success", "failure"] as const)),
  start: Type.Optional(Int({ minimum: 0, maximum: 4_102_444_800_000 })),
  end: Type.Optional(Int({ minimum: 0, maximum: 4_102_444_800_000 })),
});

const DEFAULT_LIMIT = 50;

/**
 * Each context (keys, identity, ratelimit, webhooks) keeps the audit records of its own changes;
 * this asks all four for one more than the page past the cursor, with the same filters, and merges them
 * newest first, so the page is exact and hasMore tells whether any record is left. The services
 * read the cursor and check the filters (a cursor they cannot read, or an end not after start,
 * is a 400 saying what to pass).
 */
export const list = route({
  answer: Type.Array(AuditLogEntry),
  paginated: true,
  example: { limit: 50, resourceId: "key_2cGKbMxRjIzhCxo1IdjH3a" },
  rootKey: { needs: ["audit.*.read"] },
  permissions: () => ["audit.*.read"],
  description:
    "The workspace's audit log: one record per management change (APIs, keys, credits, roles, permissions, " +
    "identities, rate-limit overrides, webhooks, root keys from the CLI), one per webhook the system " +
    "disabled (actor system), and one per management request a service refused, with its error code. " +
    "Newest first. Records hold ids and the names of the fields a change set, never key material, secrets, " +
    "URLs or meta values (docs/security.md).",
  schema,
  async handle(input, { caller, services }) {
    const limit = input.limit ?? DEFAULT_LIMIT;
    const request = {
      caller,
      cursor: input.cursor ?? "",
      limit: limit + 1,
      actorId: input.actorId ?? "",
      resourceId: input.resourceId ?? "",
      operation: input.operation ?? "",
      outcome: input.outcome ?? "",
      start: BigInt(input.start ?? 0),
      end: BigInt(input.end ?? 0),
    };
    const answers = await Promise.all(AUDIT_CONTEXTS.map((c) => services.audit[c].listAuditLogs(request)));
    const merged = answers
      .flatMap((a) => a.logs)
      .map((log) => ({ log, time: Number(log.time), id: log.id }))
      .sort(newestFirst);
    const page = merged.slice(0, limit);
    const last = page.at(-1);
    const hasMore = merged.length > limit;
    return {
      data: page.map(({ log }) => entry(log)),
      pagination: hasMore && last ? { cursor: encodeAuditCursor(last), hasMore } : { hasMore: false },
    };
  },
});

function entry(log: AuditLog) {
  return {
    auditLogId: log.id,
    time: Number(log.time),
    actor: { type: log.actorType, id: log.actorId },
    operation: log.operation,
    resources: log.resources.map((r) => ({ type: r.type, id: r.id })),
    outcome: log.outcome,
    error: log.errorCode === "" ? null : { code: log.errorCode },
    requestId: log.requestId,
    fields: log.fields,
  };
}
