import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KEY_CHANGED, revokeRootKey } from "@latchkey/keys";
import { KeyChangedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { type Bus, type Logger, NatsBus, type Sql } from "@latchkey/runtime";

/**
 * A root key revoked through the CLI reaches every gateway's root-key cache at
 * once, as a keys.v1.KeyChanged on `events.keys.changed` (the subject the
 * gateway's RootKeyAuth drops cached keys on), two ways:
 *
 * - NATS, when NATS_URL is set: the CLI publishes it itself, for gateways that
 *   run as processes of their own.
 * - The database: the CLI sends a NOTIFY on KEY_CHANGES_CHANNEL in the
 *   transaction that revokes (so only a committed revocation is announced),
 *   and every `npm start` on that database LISTENs and relays it onto its
 *   bus. That reaches a `npm start` with no NATS at all, on the embedded
 *   database (its wire server hands a NOTIFY to the connections that LISTEN)
 *   as on PostgreSQL, at the cost of one idle connection, and no polling.
 *
 * A message may arrive twice (both ways): dropping a cache entry twice is harmless.
 */
export const KEY_CHANGES_CHANNEL = "latchkey_keys_changed";

/** What `root-key revoke` did: the revocation, and where it was announced besides the database. */
export interface Revocation {
  revokedAt: number;
  /** NATS_URL's publish failed: gateways on NATS drop the key only when their cache entry expires. */
  natsError?: string;
}

export async function revokeAndAnnounce(
  sql: Sql,
  id: string,
  options: { natsUrl: string | undefined; log: Logger },
): Promise<Revocation> {
  const { revokedAt, message } = await sql.begin(async (tx) => {
    const revoked = await revokeRootKey(tx as unknown as Sql, id);
    const message = toBinary(
      KeyChangedSchema,
      create(KeyChangedSchema, { workspaceId: revoked.workspaceId, keyId: id, hash: revoked.hash }),
    );
    await tx`SELECT pg_notify(${KEY_CHANGES_CHANNEL}, ${Buffer.from(message).toString("base64")})`;
    return { revokedAt: revoked.revokedAt, message };
  });
  if (!options.natsUrl) return { revokedAt };
  try {
    const bus = await NatsBus.connect(options.natsUrl, options.log, "latchkey-cli");
    bus.publish(KEY_CHANGED, message);
    // Draining flushes the message to the server before the connection closes.
    await bus.close();
    return { revokedAt };
  } catch (err) {
    return { revokedAt, natsError: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * `npm start`: relays every KeyChanged announced through the database onto
 * `bus`. Answers the function that stops it.
 */
export async function relayKeyChanges(sql: Sql, bus: Bus, log: Logger): Promise<() => Promise<void>> {
  const { unlisten } = await sql.listen(KEY_CHANGES_CHANNEL, (payload) => {
    const message = Buffer.from(payload, "base64");
    try {
      const change = fromBinary(KeyChangedSchema, message);
      // One that names no key would make the keys service drop its whole cache.
      if (change.keyId !== "" || change.hash !== "") return bus.publish(KEY_CHANGED, message);
    } catch {
      // Not a KeyChanged: said below.
    }
    log.warn(
      { channel: KEY_CHANGES_CHANNEL },
      "ignored a notification that is not a keys.v1.KeyChanged naming a key",
    );
  });
  return async () => {
    await unlisten();
  };
}
