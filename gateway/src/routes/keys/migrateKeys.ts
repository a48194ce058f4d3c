import { Type } from "@sinclair/typebox";
import { INTERVAL_OF } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Enum, ID_PATTERN, Int, Nullable, Str } from "../../schema.ts";
import { ratelimitConfigOf } from "../identities/createIdentity.ts";
import { createKeySchema } from "./createKey.ts";

const created = createKeySchema.properties;

/**
 * Keys imported by the SHA-256 of their plaintext (64 hex or 44
 * base64 characters, checked by the service), with createKey's fields and
 * limits. `start` is ours: what reads show as the key's start. Credits follow
 * Unkey's KeyCreditsData, where remaining null means unlimited.
 */
export const migrateKeys = route({
  audited: true,
  description:
    "Key hashes are unique per workspace: a hash another workspace holds is migrated into the caller's rather than reported as failed. Each key also accepts `start` and `credits.remaining: null` (unlimited).",
  answer: Closed({
    migrated: Type.Array(
      Closed({ hash: Type.String(), keyId: Type.String({ examples: ["key_2cGKbMxRyIzhCxo1Idjz8q"] }) }),
    ),
    failed: Type.Array(Type.String(), { description: "Hashes not imported: a key with that hash exists." }),
  }),
  example: {
    migrationId: "acme",
    apiId: "api_123",
    keys: [{ hash: "LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=" }],
  },
  rootKey: {
    needs: ["api.<apiId>.create_key"],
    also: "`roles`, `permissions`: also the `rbac.*` permissions to add them",
    masked: "A root key without `create_key` on the API is answered 404, as for an API that does not exist.",
  },
  errors: [404],
  schema: Closed({
    migrationId: Str(3, 255),
    apiId: Str(3, 255, ID_PATTERN),
    keys: Type.Array(
      Closed({
        hash: Str(3, 255),
        start: Type.Optional(Str(1, 50)),
        name: created.name,
        externalId: created.externalId,
        meta: created.meta,
        roles: created.roles,
        permissions: created.permissions,
        expires: created.expires,
        enabled: created.enabled,
        credits: Type.Optional(
          Closed({
            remaining: Nullable(Int()),
            refill: Type.Optional(
              Closed({
                interval: Enum(["daily", "monthly"] as const),
                amount: Int({ minimum: 1 }),
                refillDay: Type.Optional(Int({ minimum: 1, maximum: 31 })),
              }),
            ),
          }),
        ),
        ratelimits: created.ratelimits,
      }),
      { minItems: 1, maxItems: 1000 },
    ),
  }),
  async handle(input, { caller, services }) {
    const res = await services.keys.migrateKeys({
      caller,
      migrationId: input.migrationId,
      apiId: input.apiId,
      keys: input.keys.map((k) => ({
        hash: k.hash,
        start: k.start,
        name: k.name,
        externalId: k.externalId,
        metaJson: k.meta === undefined ? undefined : JSON.stringify(k.meta),
        roles: k.roles ?? [],
        permissions: k.permissions ?? [],
        expires: k.expires === undefined ? undefined : BigInt(k.expires),
        enabled: k.enabled,
        credits: k.credits && {
          remaining: k.credits.remaining === null ? undefined : BigInt(k.credits.remaining),
          refill: k.credits.refill && {
            interval: INTERVAL_OF[k.credits.refill.interval],
            amount: BigInt(k.credits.refill.amount),
            refillDay: k.credits.refill.refillDay,
          },
        },
        ratelimits: (k.ratelimits ?? []).map(ratelimitConfigOf),
      })),
    });
    return {
      data: { migrated: res.migrated.map((m) => ({ hash: m.hash, keyId: m.keyId })), failed: res.failed },
    };
  },
});
