import { create } from "@bufbuild/protobuf";
import { type Caller, CallerSchema } from "@latchkey/proto/common/v1/common_pb";

/** A caller of a workspace holding the given root-key permissions, for tests of the services. */
export const callerOf = (workspaceId: string, ...permissions: string[]): Caller =>
  create(CallerSchema, { workspaceId, rootKeyId: `rk_${workspaceId}`, permissions });
