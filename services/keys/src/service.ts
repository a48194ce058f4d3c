import type { ServiceImpl } from "@connectrpc/connect";
import type { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { audited, resourcesOf } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";
import { addPermissions } from "./rpc/addPermissions.ts";
import { addRoles } from "./rpc/addRoles.ts";
import { authenticateRootKey } from "./rpc/authenticateRootKey.ts";
import { createApi } from "./rpc/createApi.ts";
import { createForwardAuthPolicy } from "./rpc/createForwardAuthPolicy.ts";
import { createKey } from "./rpc/createKey.ts";
import { deleteApi } from "./rpc/deleteApi.ts";
import { deleteForwardAuthPolicy } from "./rpc/deleteForwardAuthPolicy.ts";
import { deleteKey } from "./rpc/deleteKey.ts";
import { getApi } from "./rpc/getApi.ts";
import { getForwardAuthPolicy } from "./rpc/getForwardAuthPolicy.ts";
import { getKey } from "./rpc/getKey.ts";
import { listApis } from "./rpc/listApis.ts";
import { listForwardAuthPolicies } from "./rpc/listForwardAuthPolicies.ts";
import { listKeys } from "./rpc/listKeys.ts";
import { loadForwardAuthPolicies } from "./rpc/loadForwardAuthPolicies.ts";
import { migrateKeys } from "./rpc/migrateKeys.ts";
import { receiveGithubLeaks } from "./rpc/receiveGithubLeaks.ts";
import { removePermissions } from "./rpc/removePermissions.ts";
import { removeRoles } from "./rpc/removeRoles.ts";
import { reportLeak } from "./rpc/reportLeak.ts";
import { rerollKey } from "./rpc/rerollKey.ts";
import { setPermissions } from "./rpc/setPermissions.ts";
import { setRoles } from "./rpc/setRoles.ts";
import { updateApi } from "./rpc/updateApi.ts";
import { updateCredits } from "./rpc/updateCredits.ts";
import { updateForwardAuthPolicy } from "./rpc/updateForwardAuthPolicy.ts";
import { updateKey } from "./rpc/updateKey.ts";
import { verifyKey } from "./rpc/verifyKey.ts";
import { verifyKeyBatch } from "./rpc/verifyKeyBatch.ts";
import { whoami } from "./rpc/whoami.ts";

/**
 * Every RPC of keys.v1.KeysService: one missing is a compile error. Each management operation is
 * `audited` under its public name: a refusal leaves its failure record, naming the ids the request
 * gave (the success record is written by the store with the change, audit.ts).
 */
export function service(deps: KeysDeps): ServiceImpl<typeof KeysService> {
  return {
    createApi: audited(deps, "apis.createApi", () => [], createApi(deps)),
    getApi: getApi(deps),
    listKeys: listKeys(deps),
    listApis: listApis(deps),
    deleteApi: audited(deps, "apis.deleteApi", (req) => resourcesOf(["api", req.apiId]), deleteApi(deps)),
    updateApi: audited(deps, "apis.updateApi", (req) => resourcesOf(["api", req.apiId]), updateApi(deps)),
    createKey: audited(deps, "keys.createKey", (req) => resourcesOf(["api", req.apiId]), createKey(deps)),
    getKey: getKey(deps),
    updateKey: audited(deps, "keys.updateKey", (req) => resourcesOf(["key", req.keyId]), updateKey(deps)),
    updateCredits: audited(
      deps,
      "keys.updateCredits",
      (req) => resourcesOf(["key", req.keyId]),
      updateCredits(deps),
    ),
    deleteKey: audited(deps, "keys.deleteKey", (req) => resourcesOf(["key", req.keyId]), deleteKey(deps)),
    whoami: whoami(deps),
    rerollKey: audited(deps, "keys.rerollKey", (req) => resourcesOf(["key", req.keyId]), rerollKey(deps)),
    migrateKeys: audited(
      deps,
      "keys.migrateKeys",
      (req) => resourcesOf(["api", req.apiId]),
      migrateKeys(deps),
    ),
    verifyKey: verifyKey(deps),
    verifyKeyBatch: verifyKeyBatch(deps),
    authenticateRootKey: authenticateRootKey(deps),
    addPermissions: audited(
      deps,
      "keys.addPermissions",
      (req) => resourcesOf(["key", req.keyId]),
      addPermissions(deps),
    ),
    removePermissions: audited(
      deps,
      "keys.removePermissions",
      (req) => resourcesOf(["key", req.keyId]),
      removePermissions(deps),
    ),
    setPermissions: audited(
      deps,
      "keys.setPermissions",
      (req) => resourcesOf(["key", req.keyId]),
      setPermissions(deps),
    ),
    addRoles: audited(deps, "keys.addRoles", (req) => resourcesOf(["key", req.keyId]), addRoles(deps)),
    removeRoles: audited(
      deps,
      "keys.removeRoles",
      (req) => resourcesOf(["key", req.keyId]),
      removeRoles(deps),
    ),
    setRoles: audited(deps, "keys.setRoles", (req) => resourcesOf(["key", req.keyId]), setRoles(deps)),
    // No caller: each detection writes its own record, as the system, in the key's workspace.
    reportLeak: reportLeak(deps),
    receiveGithubLeaks: receiveGithubLeaks(deps),
    createForwardAuthPolicy: audited(
      deps,
      "forwardAuth.createPolicy",
      () => [],
      createForwardAuthPolicy(deps),
    ),
    getForwardAuthPolicy: getForwardAuthPolicy(deps),
    listForwardAuthPolicies: listForwardAuthPolicies(deps),
    updateForwardAuthPolicy: audited(
      deps,
      "forwardAuth.updatePolicy",
      (req) => resourcesOf(["forward_auth_policy", req.policyId]),
      updateForwardAuthPolicy(deps),
    ),
    deleteForwardAuthPolicy: audited(
      deps,
      "forwardAuth.deletePolicy",
      (req) => resourcesOf(["forward_auth_policy", req.policyId]),
      deleteForwardAuthPolicy(deps),
    ),
    loadForwardAuthPolicies: loadForwardAuthPolicies(deps),
  };
}
