import { Type } from "@sinclair/typebox";
import { Empty } from "../../answers.ts";
import { INTERVAL_OF } from "../../json.ts";
import { route } from "../../route.ts";
import {
  Closed,
  Enum,
  EXTERNAL_ID_PATTERN,
  ID_PATTERN,
  Int,
  Meta,
  Nullable,
  RatelimitRequest,
  SLUG_PATTERN,
  Str,
} from "../../schema.ts";
import { ratelimitConfigOf } from "../identities/createIdentity.ts";

/**
 * createKey's limits (docs/limits.md). Three states: an
 * omitted field is unchanged, a value replaces it, null clears it. Only the
 * fields the service can clear accept null (UpdateKeyRequest in keys.proto).
 */
export const updateKeySchema = Closed({
  keyId: Str(3, 255, ID_PATTERN),
  name: Type.Optional(Nullable(Str(1, 255))),
  externalId: Type.Optional(Nullable(Str(1, 255, EXTERNAL_ID_PATTERN))),
  meta: Type.Optional(Nullable(Meta())),
  expires: Type.Optional(Nullable(Int({ maximum: 4102444800000 }))),
  credits: Type.Optional(
    Nullable(
      Closed({
        remaining: Type.Optional(Nullable(Int())),
        refill: Type.Optional(
          Nullable(
            Closed({
              interval: Enum(["daily", "monthly"] as const),
              amount: Int({ minimum: 1 }),
              refillDay: Type.Optional(Int({ minimum: 1, maximum: 31 })),
            }),
          ),
        ),
      }),
    ),
  ),
  ratelimits: Type.Optional(Type.Array(RatelimitRequest(), { maxItems: 50 })),
  enabled: Type.Optional(Type.Boolean()),
  roles: Type.Optional(Type.Array(Str(1, 100), { maxItems: 100 })),
  permissions: Type.Optional(Type.Array(Str(1, 100, SLUG_PATTERN), { maxItems: 1000 })),
  // Latchkey's addition: the whole new IP allow-list; [] clears it (docs/api.md, IP allow-lists).
  ipAllowList: Type.Optional(Type.Array(Str(2, 64), { maxItems: 100 })),
  // Latchkey's addition: the whole new list of credits.low thresholds; [] returns to the API's (docs/api.md).
  creditThresholds: Type.Optional(Type.Array(Int({ maximum: 100 }), { maxItems: 10 })),
});

export const updateKey = route({
  audited: true,
  description:
    "Roles and permissions changed here need the same `rbac.*` permissions as changing them with the role and permission operations (Unkey does not ask them here).",
  answer: Empty,
  example: { keyId: "key_123", name: "Acme" },
  rootKey: {
    needs: ["api.<apiId>.update_key"],
    also: "`roles` and `permissions`: also the `rbac.*` permissions to add and remove them",
  },
  errors: [404],
  schema: updateKeySchema,
  async handle(input, { caller, services }) {
    const cleared: string[] = [];
    /** The value to set, or undefined to leave the field alone; null also names the field in `cleared`. */
    const given = <V>(path: string, value: V | null | undefined): V | undefined => {
      if (value === null) cleared.push(path);
      return value ?? undefined;
    };
    const name = given("name", input.name);
    const externalId = given("externalId", input.externalId);
    const meta = given("meta", input.meta);
    const expires = given("expires", input.expires);
    const credits = given("credits", input.credits);
    const remaining = credits && given("credits.remaining", credits.remaining);
    const refill = credits && given("credits.refill", credits.refill);
    await services.keys.updateKey({
      caller,
      keyId: input.keyId,
      name,
      externalId,
      metaJson: meta === undefined ? undefined : JSON.stringify(meta),
      expires: expires === undefined ? undefined : BigInt(expires),
      enabled: input.enabled,
      credits: credits && {
        remaining: remaining === undefined ? undefined : BigInt(remaining),
        refill: refill && {
          interval: INTERVAL_OF[refill.interval],
          amount: BigInt(refill.amount),
          refillDay: refill.refillDay,
        },
      },
      ratelimits: input.ratelimits && { ratelimits: input.ratelimits.map(ratelimitConfigOf) },
      roles: input.roles && { values: input.roles },
      permissions: input.permissions && { values: input.permissions },
      ipAllowList: input.ipAllowList && { values: input.ipAllowList },
      creditThresholds: input.creditThresholds && { values: input.creditThresholds },
      cleared,
    });
    return { data: {} };
  },
});
