import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { OverridesChangedSchema, RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import type { Bus } from "@latchkey/runtime";

export const SUBJECT_CHECKED = "events.ratelimit.checked";
export const SUBJECT_OVERRIDES_CHANGED = "events.ratelimit.overrides_changed";

/** Every event the ratelimit context emits. */
export interface RatelimitEvents {
  /** ratelimit.v1.RatelimitChecked, once per standalone check; published off the request path. */
  checked(event: MessageInitShape<typeof RatelimitCheckedSchema>): void;
  /** ratelimit.v1.OverridesChanged: every replica reloads the namespace's overrides before its next check. */
  overridesChanged(workspaceId: string, namespaceId: string): void;
}

export function ratelimitEvents(bus: Bus): RatelimitEvents {
  let queue: MessageInitShape<typeof RatelimitCheckedSchema>[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    for (const e of batch)
      bus.publish(SUBJECT_CHECKED, toBinary(RatelimitCheckedSchema, create(RatelimitCheckedSchema, e)));
  };
  return {
    checked(event) {
      if (queue.push(event) === 1) setImmediate(flush);
    },
    overridesChanged(workspaceId, namespaceId) {
      bus.publish(
        SUBJECT_OVERRIDES_CHANGED,
        toBinary(OverridesChangedSchema, create(OverridesChangedSchema, { workspaceId, namespaceId })),
      );
    },
  };
}
