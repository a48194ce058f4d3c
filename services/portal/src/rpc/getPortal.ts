import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetPortalRequest, GetPortalResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { authenticatedCaller } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { portalView } from "../session.ts";
import { visiblePortal } from "./visible.ts";

export function getPortal(deps: PortalDeps) {
  return async (req: GetPortalRequest): Promise<MessageInitShape<typeof GetPortalResponseSchema>> => {
    const caller = authenticatedCaller(req);
    return { portal: portalView(await visiblePortal(deps, caller, req.portalId, "read_portal")) };
  };
}
