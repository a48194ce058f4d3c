import type { Key } from "@latchkey/proto/keys/v1/keys_pb";
import { Type } from "@sinclair/typebox";
import { KeyData } from "../../answers.ts";
import { credits, defined, identity, meta, num, optNum, ratelimitConfig } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

export const getKey = route({
  answer: KeyData,
  example: { keyId: "key_123" },
  rootKey: { needs: ["api.<apiId>.read_key"], also: "`decrypt`: also `api.<apiId>.decrypt_key`" },
  errors: [404, 412],
  schema: Closed({ keyId: Str(3, 255, ID_PATTERN), decrypt: Type.Optional(Type.Boolean()) }),
  async handle(input, { caller, services }) {
    const { key } = await services.keys.getKey({
      caller,
      keyId: input.keyId,
      decrypt: input.decrypt ?? false,
    });
    if (!key) throw new Error("GetKey answered without a key");
    return { data: keyResponseData(key) };
  },
});

/** Unkey's KeyResponseData, shared by getKey, whoami and listKeys. */
export function keyResponseData(k: Key) {
  return defined({
    keyId: k.keyId,
    start: k.start,
    enabled: k.enabled,
    name: k.name,
    meta: meta(k.metaJson),
    createdAt: num(k.createdAt),
    updatedAt: optNum(k.updatedAt),
    lastUsedAt: optNum(k.lastUsedAt),
    expires: optNum(k.expires),
    permissions: k.permissions,
    roles: k.roles,
    credits: k.credits ? credits(k.credits) : undefined,
    identity: k.identity ? identity(k.identity) : undefined,
    ratelimits: k.ratelimits.length > 0 ? k.ratelimits.map(ratelimitConfig) : undefined,
    plaintext: k.plaintext,
    ipAllowList: k.ipAllowList.length > 0 ? k.ipAllowList : undefined,
    leakedAt: optNum(k.leakedAt),
    creditThresholds: k.creditThresholds.length > 0 ? k.creditThresholds : undefined,
  });
}
