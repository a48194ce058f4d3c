import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListKeysRequest, ListKeysResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, need, requirePermissions } from "@latchkey/runtime";
import { apiNotFound, authenticatedCaller, requireOrMask, visibleApi } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { identitiesById } from "../rbac.ts";
import { recoverPlaintext } from "../recovery.ts";
import { keyView } from "../views.ts";

export function listKeys(deps: KeysDeps) {
  return async (req: ListKeysRequest): Promise<MessageInitShape<typeof ListKeysResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const input = validListKeys(req);
    // As Unkey: a root key that may not read this API's keys learns nothing about the API.
    requireOrMask(
      caller,
      [need("api", input.apiId, "read_key"), need("api", input.apiId, "read_api")],
      apiNotFound,
    );
    const api = await visibleApi(deps, caller, input.apiId);
    if (input.decrypt) requirePermissions(caller, [need("api", api.id, "decrypt_key")]);
    const page = await deps.store.listKeys(api.id, {
      limit: input.limit,
      after: input.cursor,
      ...(input.externalId !== undefined && { externalId: input.externalId }),
    });
    const now = deps.clock.now();
    // The page's identities in one call.
    const identities = await identitiesById(
      deps,
      caller,
      page.keys.map((k) => k.identityId),
    );
    const keys = await Promise.all(
      page.keys.map(async (k) =>
        keyView(
          deps.lastUsed.latest(k),
          now,
          input.decrypt ? await recoverPlaintext(deps, k) : undefined,
          identities.get(k.identityId ?? ""),
        ),
      ),
    );
    return { keys, pagination: { cursor: page.next ?? "", hasMore: page.next !== null } };
  };
}

interface ListKeysInput {
  apiId: string;
  limit: number;
  /** The last key id of the previous page; "" sorts before every id. */
  cursor: string;
  externalId: string | undefined;
  decrypt: boolean;
}

function validListKeys(req: ListKeysRequest): ListKeysInput {
  if (req.apiId === "") throw invalidInput("/apiId", "apiId is required");
  const limit = req.limit ?? 100;
  if (limit < 1 || limit > 100) throw invalidInput("/limit", `limit must be between 1 and 100, got ${limit}`);
  if (req.cursor.length > 255) throw invalidInput("/cursor", "cursor is not one this service issued");
  if (req.externalId === "") throw invalidInput("/externalId", "externalId must not be empty");
  return { apiId: req.apiId, limit, cursor: req.cursor, externalId: req.externalId, decrypt: req.decrypt };
}
