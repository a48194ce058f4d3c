import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  type AuditRecord,
  type AuditResource,
  auditSuccess,
  DOMAIN_EVENT,
  type DomainEventData,
  type DomainEventType,
  domainEvent,
  withFailureAudit,
} from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";

/**
 * The keys context's management operations each leave one audit record (packages/runtime/src/audit.ts):
 * the success record the store writes with the change, or the failure record written here when the
 * operation is refused. `resources` are the ids the request names, for the failure record.
 */
export function audited<Req extends { caller?: Caller | undefined }, Res>(
  deps: KeysDeps,
  operation: string,
  resources: (req: Req) => AuditResource[],
  handler: (req: Req) => Promise<Res>,
): (req: Req) => Promise<Res> {
  return (req) =>
    withFailureAudit(
      { store: deps.store, now: () => deps.clock.now(), log: deps.log },
      req.caller,
      operation,
      resources(req),
      () => handler(req),
    );
}

/** The success record of `operation`, for the store to write with the change. */
export const succeeded = (
  deps: KeysDeps,
  caller: Caller,
  operation: string,
  resources: AuditResource[],
  fields: string[] = [],
): AuditRecord => auditSuccess(caller, caller.workspaceId, operation, resources, fields, deps.clock.now());

/** A management change other systems may be told of (webhooks): published once it is committed. */
export function published<T extends DomainEventType>(
  deps: KeysDeps,
  type: T,
  workspaceId: string,
  data: DomainEventData[T],
): void {
  const event = domainEvent(type, workspaceId, data, deps.clock.now());
  deps.events.publish(DOMAIN_EVENT, event.id, event);
}

export const apiResource = (id: string): AuditResource => ({ type: "api", id });
export const keyResource = (id: string): AuditResource => ({ type: "key", id });
