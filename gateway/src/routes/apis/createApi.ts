import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Enum, Int, Str } from "../../schema.ts";

export const createApi = route({
  audited: true,
  answer: Closed({ apiId: Type.String({ examples: ["api_2cGKbMxRyIzhCxo1Idjz8q"] }) }),
  example: { name: "payments" },
  rootKey: { needs: ["api.*.create_api"] },
  schema: Closed({
    name: Str(3, 256),
    // Latchkey's additions (docs/api.md): checksummed keys, and what a leak report does to a key.
    keyFormat: Type.Optional(Enum(["plain", "checksum"] as const)),
    leakPolicy: Type.Optional(Enum(["revoke", "flag"] as const)),
    // CIDRs every key of the API may be verified from (docs/api.md, IP allow-lists).
    ipAllowList: Type.Optional(Type.Array(Str(2, 64), { maxItems: 100 })),
    // Days before a key's expiry that key.expiring announces it; 0: never (default 7).
    expiringNoticeDays: Type.Optional(Int({ maximum: 365 })),
    // credits.low thresholds in percent its keys default to (docs/api.md, Credit thresholds).
    creditThresholds: Type.Optional(Type.Array(Int({ maximum: 100 }), { maxItems: 10 })),
  }),
  description:
    "Latchkey's additions: `keyFormat` (`plain`, the default, or `checksum`: keys end in a CRC32 that scanners and verification check, docs/api.md) and `leakPolicy` (`revoke`, the default, disables a key reported leaked; `flag` keeps it working and announces the leak).",
  permissions: () => ["api.*.create_api"],
  async handle(input, { caller, services }) {
    const res = await services.keys.createApi({
      caller,
      name: input.name,
      ...(input.keyFormat === undefined ? {} : { keyFormat: input.keyFormat }),
      ...(input.leakPolicy === undefined ? {} : { leakPolicy: input.leakPolicy }),
      ipAllowList: input.ipAllowList ?? [],
      expiringNoticeDays: input.expiringNoticeDays,
      creditThresholds: input.creditThresholds ?? [],
    });
    return { data: { apiId: res.apiId } };
  },
});
