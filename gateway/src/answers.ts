import { type TSchema, Type } from "@sinclair/typebox";
import { Closed, Enum } from "./schema.ts";

/**
 * The parts of success answers that several operations share, as JSON Schema (TypeBox). Each
 * route names what its `data` holds (`answer`); docs/openapi.json documents it, and the
 * end-to-end tests hold every answer to it. Objects are closed wherever the answer is fully
 * known, so a field the document does not promise fails a test.
 */

const Id = (example: string) => Type.String({ examples: [example] });
const Count = (example: number) => Type.Integer({ minimum: 0, examples: [example] });
const Millis = () => Type.Integer({ minimum: 0, examples: [1_767_225_600_000] });

/** `data` of an operation with nothing to say. */
export const Empty = Closed({});

/** Arbitrary JSON object stored with keys and identities. */
export const MetaObject = Type.Record(Type.String(), Type.Unknown(), { examples: [{ plan: "pro" }] });

export const RatelimitConfig = Closed({
  id: Id("rl_2cGKbMxRjIzhCxo1IdjH3a"),
  name: Type.String({ examples: ["requests"] }),
  limit: Count(10),
  duration: Count(60_000),
  autoApply: Type.Boolean(),
});

export const Identity = Closed({
  id: Id("id_2cGKbMxRjIzhCxo1IdjH3a"),
  externalId: Type.String({ examples: ["user_42"] }),
  meta: Type.Optional(MetaObject),
  ratelimits: Type.Optional(Type.Array(RatelimitConfig)),
  ipAllowList: Type.Optional(
    Type.Array(Type.String({ examples: ["203.0.113.0/24"] }), {
      description:
        "Latchkey's addition: CIDRs the identity's keys may be verified from (getIdentity, listIdentities, updateIdentity); absent: any.",
    }),
  ),
});

/** Credits: `remaining` null means unlimited. */
export const Credits = Closed({
  remaining: Type.Union([Type.Integer(), Type.Null()], { examples: [99] }),
  refill: Type.Optional(
    Closed({
      interval: Enum(["daily", "monthly"] as const),
      amount: Count(100),
      refillDay: Type.Optional(Type.Integer({ minimum: 1, maximum: 31 })),
    }),
  ),
});

export const Permission = Closed({
  id: Id("perm_2cGKbMxRjIzhCxo1IdjH3a"),
  name: Type.String({ examples: ["documents.read"] }),
  slug: Type.String({ examples: ["documents.read"] }),
  description: Type.Optional(Type.String()),
});

export const Role = Closed({
  id: Id("role_2cGKbMxRjIzhCxo1IdjH3a"),
  name: Type.String({ examples: ["admin"] }),
  description: Type.Optional(Type.String()),
  permissions: Type.Optional(Type.Array(Permission)),
});

/** A key's role as the key operations answer it: its permissions always listed. */
export const KeyRole = Closed({
  id: Id("role_2cGKbMxRjIzhCxo1IdjH3a"),
  name: Type.String({ examples: ["admin"] }),
  description: Type.Optional(Type.String()),
  permissions: Type.Array(Permission),
});

/** A key as keys.getKey, keys.whoami and apis.listKeys answer it; never its hash. */
export const KeyData = Closed({
  keyId: Id("key_2cGKbMxRyIzhCxo1Idjz8q"),
  start: Type.String({ examples: ["sk_3ZJ"] }),
  enabled: Type.Boolean(),
  name: Type.Optional(Type.String({ examples: ["Acme"] })),
  meta: Type.Optional(MetaObject),
  createdAt: Millis(),
  updatedAt: Type.Optional(Millis()),
  lastUsedAt: Type.Optional(Millis()),
  expires: Type.Optional(Millis()),
  permissions: Type.Array(Type.String({ examples: ["documents.read"] })),
  roles: Type.Array(Type.String({ examples: ["admin"] })),
  credits: Type.Optional(Credits),
  identity: Type.Optional(Identity),
  ratelimits: Type.Optional(Type.Array(RatelimitConfig)),
  plaintext: Type.Optional(Type.String({ description: "Only with `decrypt` on a recoverable key." })),
  ipAllowList: Type.Optional(
    Type.Array(Type.String({ examples: ["203.0.113.0/24"] }), {
      description: "Latchkey's addition: CIDRs the key may be verified from; absent: any.",
    }),
  ),
  leakedAt: Type.Optional(
    Type.Integer({
      minimum: 0,
      examples: [1_767_225_600_000],
      description: "Latchkey's addition: when a leak report first named the key; absent: never.",
    }),
  ),
  creditThresholds: Type.Optional(
    Type.Array(Type.Integer({ minimum: 0, maximum: 100, examples: [50] }), {
      description:
        "Latchkey's addition: the key's own credits.low thresholds in percent, highest first; absent: its API's.",
    }),
  ),
});

/** A key's new plaintext, shown this once, and its id. */
export const NewKey = Closed({
  keyId: Id("key_2cGKbMxRyIzhCxo1Idjz8q"),
  key: Type.String({ examples: ["sk_3ZJpYtEDx9Fq2rxo4cH5pN9m"] }),
});

export const OverrideData = Closed({
  overrideId: Id("rlo_2cGKbMxRjIzhCxo1IdjH3a"),
  identifier: Type.String({ examples: ["user_1"] }),
  limit: Count(5),
  duration: Count(60_000),
});

/** Paging of the list operations that put the array in `data`. */
export const Pagination = Closed({
  cursor: Type.Optional(Type.String({ description: "Present while another page exists." })),
  hasMore: Type.Boolean(),
});

/** Every answer's `meta`. */
export const Meta = Closed({
  requestId: Type.String({ pattern: "^req_[a-zA-Z0-9]{16}$", examples: ["req_2cGKbMxRyIzhCxo1"] }),
});

export const list = <S extends TSchema>(item: S) => Type.Array(item);
