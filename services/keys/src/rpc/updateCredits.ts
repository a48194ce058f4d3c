import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  CreditsOperation,
  type UpdateCreditsRequest,
  type UpdateCreditsResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput, need, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import type { CreditsOperation as Operation } from "../store/keys-store.ts";
import { refillView } from "../views.ts";
import { keyChangeCommitted } from "./key-changed.ts";
import { int64 } from "./validation.ts";

export function updateCredits(deps: KeysDeps) {
  return async (req: UpdateCreditsRequest): Promise<MessageInitShape<typeof UpdateCreditsResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const input = validUpdateCredits(req);
    const key = await visibleKey(deps, caller, req.keyId);
    requirePermissions(caller, [need("api", key.apiId, "update_key")]);
    // Setting none (unlimited) also clears the refill.
    const fields =
      input.operation === "set" && input.value === null
        ? ["credits.remaining", "credits.refill"]
        : ["credits.remaining"];
    const result = await deps.store.updateCredits(
      key.id,
      input.operation,
      input.value,
      deps.clock.now(),
      succeeded(deps, caller, "keys.updateCredits", [keyResource(key.id), apiResource(key.apiId)], fields),
    );
    if (result === undefined) throw keyNotFound();
    if (result === "unlimited") {
      throw invalidInput("/operation", "You cannot increment or decrement a key with unlimited credits.");
    }
    // The balance is never cached, but whether the key is limited is.
    await keyChangeCommitted(deps, caller, key, "key.updated", { fields });
    return {
      ...(result.remaining !== null && { remaining: BigInt(result.remaining) }),
      ...(result.refill && { refill: refillView(result.refill) }),
    };
  };
}

function validUpdateCredits(req: UpdateCreditsRequest): { operation: Operation; value: number | null } {
  const value = req.value === undefined ? null : int64(req.value, "/value");
  switch (req.operation) {
    case CreditsOperation.SET:
      return { operation: "set", value };
    case CreditsOperation.INCREMENT:
    case CreditsOperation.DECREMENT: {
      const operation = req.operation === CreditsOperation.INCREMENT ? "increment" : "decrement";
      if (value === null) throw invalidInput("/value", `value is required to ${operation} credits`);
      return { operation, value };
    }
    case CreditsOperation.UNSPECIFIED:
      throw invalidInput("/operation", "operation must be set, increment or decrement");
    default: {
      const never: never = req.operation;
      throw invalidInput("/operation", `unknown operation ${never}`);
    }
  }
}
