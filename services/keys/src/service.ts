import type { ServiceImpl } from "@connectrpc/connect";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "./deps.ts";
import { addPermissions } from "./rpc/addPermissions.ts";
import { addRoles } from "./rpc/addRoles.ts";
import { authenticateRootKey } from "./rpc/authenticateRootKey.ts";
import { createApi } from "./rpc/createApi.ts";
import { createKey } from "./rpc/createKey.ts";
import { deleteApi } from "./rpc/deleteApi.ts";
import { deleteKey } from "./rpc/deleteKey.ts";
import { getApi } from "./rpc/getApi.ts";
import { getKey } from "./rpc/getKey.ts";
import { listKeys } from "./rpc/listKeys.ts";
import { migrateKeys } from "./rpc/migrateKeys.ts";
import { removePermissions } from "./rpc/removePermissions.ts";
import { removeRoles } from "./rpc/removeRoles.ts";
import { rerollKey } from "./rpc/rerollKey.ts";
import { setPermissions } from "./rpc/setPermissions.ts";
import { setRoles } from "./rpc/setRoles.ts";
import { updateCredits } from "./rpc/updateCredits.ts";
import { updateKey } from "./rpc/updateKey.ts";
import { verifyKey } from "./rpc/verifyKey.ts";
import { verifyKeyBatch } from "./rpc/verifyKeyBatch.ts";
import { whoami } from "./rpc/whoami.ts";

/** Every RPC of keys.v1.KeysService: one missing is a compile error. */
export function service(deps: KeysDeps): ServiceImpl<typeof KeysService> {
  return {
    createApi: createApi(deps),
    getApi: getApi(deps),
    listKeys: listKeys(deps),
    deleteApi: deleteApi(deps),
    createKey: createKey(deps),
    getKey: getKey(deps),
    updateKey: updateKey(deps),
    updateCredits: updateCredits(deps),
    deleteKey: deleteKey(deps),
    whoami: whoami(deps),
    rerollKey: rerollKey(deps),
    migrateKeys: migrateKeys(deps),
    verifyKey: verifyKey(deps),
    verifyKeyBatch: verifyKeyBatch(deps),
    authenticateRootKey: authenticateRootKey(deps),
    addPermissions: addPermissions(deps),
    removePermissions: removePermissions(deps),
    setPermissions: setPermissions(deps),
    addRoles: addRoles(deps),
    removeRoles: removeRoles(deps),
    setRoles: setRoles(deps),
  };
}
