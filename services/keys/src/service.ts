import type { ServiceImpl } from "@connectrpc/connect";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "./deps.ts";
import { authenticateRootKey } from "./rpc/authenticateRootKey.ts";
import { createApi } from "./rpc/createApi.ts";
import { createKey } from "./rpc/createKey.ts";
import { getApi } from "./rpc/getApi.ts";
import { getKey } from "./rpc/getKey.ts";
import { verifyKey } from "./rpc/verifyKey.ts";
import { verifyKeyBatch } from "./rpc/verifyKeyBatch.ts";

/** Every RPC of keys.v1.KeysService: one missing is a compile error. */
export function service(deps: KeysDeps): ServiceImpl<typeof KeysService> {
  return {
    createApi: createApi(deps),
    getApi: getApi(deps),
    createKey: createKey(deps),
    getKey: getKey(deps),
    verifyKey: verifyKey(deps),
    verifyKeyBatch: verifyKeyBatch(deps),
    authenticateRootKey: authenticateRootKey(deps),
  };
}
